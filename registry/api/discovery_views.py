"""Role-scoped discovery: the tools a caller or a role may use, and permission checks."""

from __future__ import annotations

from django.contrib.auth.models import Group
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from registry import authorization, formats, selectors
from registry.api import grant_serializers as s
from registry.api.base import BaseAPIView
from registry.api.serializers import ToolOutputSerializer
from registry.models import Action
from toolhub.api.openapi.errors import errors
from toolhub.api.openapi.pages import page_parameters, paginated
from toolhub.api.params import query_choice
from toolhub.exceptions import NotFound

# Discovery


class RegistryMeView(BaseAPIView):
    known_query_params = ("format",)

    @extend_schema(
        parameters=[OpenApiParameter("format", str, enum=list(formats.FORMATS), default="raw")],
        responses={200: dict},
        description="The active tools the caller may execute, in an LLM provider's tool format.",
    )
    def get(self, request):
        fmt = query_choice(request.query_params, "format", formats.FORMATS) or "raw"
        tools = list(selectors.tool_discovery_list(authorization.tools_executable_by(request.user)))
        return Response(formats.render(tools, fmt))


class RegistryByRoleView(BaseAPIView):
    known_query_params = ("permission_action",)

    def role_from_kwargs(self, **kwargs) -> Group:
        if "role_name" in kwargs:
            role = Group.objects.filter(name=kwargs["role_name"]).first()
        else:
            role = Group.objects.filter(pk=kwargs["role_id"]).first()
        # A role the caller may not ask about answers like one that does not exist:
        # a 403 would confirm that the name or id is a role.
        if role is None or not authorization.may_ask_about_role(self.request.user, role):
            raise NotFound(
                "Role not found (you may ask only about your own roles).", code="role_not_found"
            )
        return role

    @extend_schema(
        parameters=[
            OpenApiParameter("permission_action", str, enum=Action.values, default="read"),
            *page_parameters(),
        ],
        responses={200: paginated(ToolOutputSerializer), **errors(404)},
    )
    def get(self, request, **kwargs):
        role = self.role_from_kwargs(**kwargs)
        action = query_choice(request.query_params, "permission_action", Action.values) or "read"
        ids = authorization.tools_for_role(role, action).values("pk")
        # Never reveal a tool the caller itself may not read.
        qs = self.tool_queryset().filter(pk__in=ids).order_by("name")
        return self.paginate(qs, ToolOutputSerializer)


class CheckPermissionView(BaseAPIView):
    known_query_params = ("required_action",)

    @extend_schema(
        parameters=[
            OpenApiParameter("required_action", str, enum=Action.values, default=Action.EXECUTE)
        ],
        responses={200: s.PermissionCheckOutputSerializer, **errors(404)},
    )
    def get(self, request, tool_id, role_id):
        tool = self.get_tool(tool_id)
        role = RegistryByRoleView.role_from_kwargs(self, role_id=role_id)
        # The seed's default: whether the role may run the tool.
        required = (
            query_choice(request.query_params, "required_action", Action.values) or Action.EXECUTE
        )
        granted = authorization.granted_action(role, tool)
        allowed = authorization.role_can(role, required, tool)
        return Response(
            {
                "allowed": allowed,
                "has_permission": allowed,
                "granted_action": granted,
                "required_action": required,
                "tool_id": str(tool.pk),
                "role_id": role.pk,
            }
        )
