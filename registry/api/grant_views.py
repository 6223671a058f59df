"""API for per-tool grants, one at a time, in bulk, and by tool or role."""

from __future__ import annotations

from django.contrib.auth.models import Group
from django.db import transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response

from registry.api import grant_serializers as s
from registry.api.admin_checks import require_admin_or_reviewer
from registry.api.base import BaseAPIView
from registry.models import Action, Tool, ToolGrant
from registry.policy import policy_check
from registry.services import grants as grant_services
from toolhub.api.openapi.errors import errors
from toolhub.api.openapi.pages import page_parameters, paginated
from toolhub.api.params import query_choice, query_id, query_uuid, reject_unknown
from toolhub.exceptions import NotFound

# Grants


def _grant_qs():
    return ToolGrant.objects.select_related("tool", "role", "granted_by")


def _tool_or_404(tool_id) -> Tool:
    tool = Tool.objects.filter(pk=tool_id).first()
    if tool is None:
        raise NotFound("Tool not found.", code="tool_not_found")
    return tool


def _role_or_404(role_id) -> Group:
    role = Group.objects.filter(pk=role_id).first()
    if role is None:
        raise NotFound("Role not found.", code="role_not_found")
    return role


class GrantListView(BaseAPIView):
    known_query_params = None

    @extend_schema(
        parameters=[
            OpenApiParameter("tool_id", OpenApiTypes.UUID),
            OpenApiParameter("role_id", int),
            OpenApiParameter("action", str, enum=Action.values),
            *page_parameters(),
        ],
        responses={200: paginated(s.GrantOutputSerializer), **errors(403)},
    )
    def get(self, request):
        require_admin_or_reviewer(request.user)
        qs = _grant_qs()
        params = request.query_params
        reject_unknown(params, ("tool_id", "role_id", "action"))
        tool_id = query_uuid(params, "tool_id")
        if tool_id:
            qs = qs.filter(tool_id=tool_id)
        role_id = query_id(params, "role_id", what="a role id")
        if role_id is not None:
            qs = qs.filter(role_id=role_id)
        action = query_choice(params, "action", Action.values)
        if action:
            qs = qs.filter(action=action)
        return self.paginate(qs.order_by("-created_at"), s.GrantOutputSerializer)

    @extend_schema(
        request=s.GrantInputSerializer,
        responses={
            201: s.GrantOutputSerializer,
            200: OpenApiResponse(s.GrantOutputSerializer, description="The grant existed already."),
            **errors(404),
        },
    )
    def post(self, request):
        policy_check(actor=request.user, action="grant.write")
        data = s.GrantInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        tool = _tool_or_404(values["tool_id"]) if values.get("tool_id") else None
        role = _role_or_404(values["role_id"])
        grant, created = grant_services.grant_create(
            actor=request.user, role=role, action=values["action"], tool=tool
        )
        return Response(
            s.GrantOutputSerializer(_grant_qs().get(pk=grant.pk)).data,
            status=201 if created else 200,
        )


class GrantBulkView(BaseAPIView):
    @extend_schema(
        request=s.BulkGrantInputSerializer,
        responses={201: s.GrantOutputSerializer(many=True), **errors(404)},
    )
    def post(self, request):
        policy_check(actor=request.user, action="grant.write")
        data = s.BulkGrantInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        tool = _tool_or_404(values["tool_id"]) if values.get("tool_id") else None
        roles = [_role_or_404(rid) for rid in dict.fromkeys(values["role_ids"])]
        with transaction.atomic():
            grants = [
                grant_services.grant_create(
                    actor=request.user, role=role, action=values["action"], tool=tool
                )[0]
                for role in roles
            ]
        qs = _grant_qs().filter(pk__in=[g.pk for g in grants])
        return Response(s.GrantOutputSerializer(qs, many=True).data, status=201)


class GrantDetailView(BaseAPIView):
    def get_grant(self, grant_id) -> ToolGrant:
        grant = _grant_qs().filter(pk=grant_id).first()
        if grant is None:
            raise NotFound("Grant not found.", code="grant_not_found")
        return grant

    @extend_schema(responses={200: s.GrantOutputSerializer, **errors(403)})
    def get(self, request, grant_id):
        require_admin_or_reviewer(request.user)
        return Response(s.GrantOutputSerializer(self.get_grant(grant_id)).data)

    @extend_schema(responses={204: None}, description="Revokes the grant.")
    def delete(self, request, grant_id):
        policy_check(actor=request.user, action="grant.write")
        grant_services.grant_revoke(actor=request.user, grant=self.get_grant(grant_id))
        return Response(status=204)


class GrantsByToolView(BaseAPIView):
    @extend_schema(
        parameters=page_parameters(),
        responses={200: paginated(s.GrantOutputSerializer), **errors(403)},
    )
    def get(self, request, tool_id):
        require_admin_or_reviewer(request.user)
        tool = _tool_or_404(tool_id)
        qs = _grant_qs().filter(tool=tool) | _grant_qs().filter(tool__isnull=True)
        return self.paginate(qs.order_by("-created_at"), s.GrantOutputSerializer)


class GrantsByRoleView(BaseAPIView):
    @extend_schema(
        parameters=page_parameters(),
        responses={200: paginated(s.GrantOutputSerializer), **errors(403)},
    )
    def get(self, request, role_id):
        require_admin_or_reviewer(request.user)
        role = _role_or_404(role_id)
        return self.paginate(
            _grant_qs().filter(role=role).order_by("-created_at"), s.GrantOutputSerializer
        )
