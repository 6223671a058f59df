"""API for roles, agents, tokens, grants, and role-scoped discovery."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import Prefetch
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response

from registry import access, formats
from registry.api import access_serializers as s
from registry.api.base import BaseAPIView
from registry.api.serializers import ToolOutputSerializer
from registry.models import Action, Agent, ApiToken, Tool, ToolConfig, ToolGrant, ToolParameter
from registry.services import access as services
from toolhub.api.openapi import errors, page_parameters, paginated
from toolhub.api.params import parse_id, query_choice, query_id, query_uuid, reject_unknown
from toolhub.exceptions import InvalidInput, NotFound, PermissionDenied


def require_platform_admin(user) -> None:
    if not access.is_platform_admin(user):
        raise PermissionDenied("Only platform admins may do this.")


def require_admin_or_reviewer(user) -> None:
    if not (access.is_platform_admin(user) or access.is_reviewer(user)):
        raise PermissionDenied("Only platform admins and reviewers may see this.")


def _role_qs():
    return Group.objects.select_related("profile").prefetch_related("permissions__content_type")


def _find_user(ref: str):
    User = get_user_model()
    user = User.objects.filter(username=ref).first()
    user_id = parse_id(ref) if user is None else None
    if user_id is not None:
        user = User.objects.filter(pk=user_id).first()
    if user is None or hasattr(user, "agent"):
        raise InvalidInput(
            f"Unknown owner '{ref}': give the username of a person.",
            details=[{"field": "owner", "message": "Unknown user.", "code": "invalid"}],
        )
    return user


# Roles


class RoleListView(BaseAPIView):
    @extend_schema(parameters=page_parameters(), responses=paginated(s.RoleOutputSerializer))
    def get(self, request):
        qs = _role_qs().order_by("name")
        if not (access.is_platform_admin(request.user) or access.is_reviewer(request.user)):
            qs = qs.filter(pk__in=access.role_ids_of(request.user))
        return self.paginate(qs, s.RoleOutputSerializer)

    @extend_schema(
        request=s.RoleInputSerializer, responses={201: s.RoleOutputSerializer, **errors(409)}
    )
    def post(self, request):
        require_platform_admin(request.user)
        data = s.RoleInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        role = services.role_create(actor=request.user, **data.validated_data)
        return Response(s.RoleOutputSerializer(_role_qs().get(pk=role.pk)).data, status=201)


class RoleDetailView(BaseAPIView):
    def get_role(self, role_id) -> Group:
        role = _role_qs().filter(pk=role_id).first()
        if role is None or not access.may_ask_about_role(self.request.user, role):
            raise NotFound("Role not found.", code="role_not_found")
        return role

    @extend_schema(responses=s.RoleOutputSerializer)
    def get(self, request, role_id):
        return Response(s.RoleOutputSerializer(self.get_role(role_id)).data)

    @extend_schema(
        request=s.RoleInputSerializer, responses={200: s.RoleOutputSerializer, **errors(409)}
    )
    def patch(self, request, role_id):
        role = self.get_role(role_id)
        require_platform_admin(request.user)
        data = s.RoleInputSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        role = services.role_update(actor=request.user, role=role, data=dict(data.validated_data))
        return Response(s.RoleOutputSerializer(_role_qs().get(pk=role.pk)).data)

    @extend_schema(responses={204: None, **errors(409)})
    def delete(self, request, role_id):
        role = self.get_role(role_id)
        require_platform_admin(request.user)
        services.role_delete(actor=request.user, role=role)
        return Response(status=204)


# Agents


def _agent_qs():
    return Agent.objects.select_related("owner", "user").prefetch_related("user__groups")


class AgentAccessMixin(BaseAPIView):
    """Which agents the caller sees, and who manages their tokens (no HTTP methods here)."""

    def visible_agents(self):
        user = self.request.user
        qs = _agent_qs()
        if access.is_platform_admin(user) or access.is_reviewer(user):
            return qs
        # People see the agents they own; an agent sees itself.
        return qs.filter(owner=user) | qs.filter(user=user)

    def get_agent(self, agent_id) -> Agent:
        agent = self.visible_agents().filter(pk=agent_id).first()
        if agent is None:
            raise NotFound("Agent not found.", code="agent_not_found")
        return agent

    def check_token_admin(self, agent: Agent) -> None:
        user = self.request.user
        if not (access.is_platform_admin(user) or agent.owner_id == user.pk):
            raise PermissionDenied("Only platform admins and the agent's owner manage its tokens.")


class AgentListView(AgentAccessMixin):
    @extend_schema(parameters=page_parameters(), responses=paginated(s.AgentOutputSerializer))
    def get(self, request):
        return self.paginate(self.visible_agents().order_by("name"), s.AgentOutputSerializer)

    @extend_schema(
        request=s.AgentInputSerializer, responses={201: s.AgentOutputSerializer, **errors(409)}
    )
    def post(self, request):
        require_platform_admin(request.user)
        data = s.AgentInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        values["owner"] = _find_user(values["owner"])
        agent = services.agent_create(actor=request.user, **values)
        return Response(s.AgentOutputSerializer(_agent_qs().get(pk=agent.pk)).data, status=201)


class AgentDetailView(AgentAccessMixin):
    @extend_schema(responses=s.AgentOutputSerializer)
    def get(self, request, agent_id):
        return Response(s.AgentOutputSerializer(self.get_agent(agent_id)).data)

    @extend_schema(request=s.AgentUpdateSerializer, responses=s.AgentOutputSerializer)
    def patch(self, request, agent_id):
        agent = self.get_agent(agent_id)
        require_platform_admin(request.user)
        data = s.AgentUpdateSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        if "owner" in values:
            values["owner"] = _find_user(values["owner"])
        services.agent_update(actor=request.user, agent=agent, data=values)
        return Response(s.AgentOutputSerializer(_agent_qs().get(pk=agent.pk)).data)

    @extend_schema(
        responses={204: None}, description="Deactivates the agent: all its tokens stop working."
    )
    def delete(self, request, agent_id):
        agent = self.get_agent(agent_id)
        require_platform_admin(request.user)
        services.agent_update(actor=request.user, agent=agent, data={"is_active": False})
        return Response(status=204)


class AgentTokenListView(AgentAccessMixin):
    @extend_schema(
        parameters=page_parameters(),
        responses={200: paginated(s.TokenOutputSerializer), **errors(403)},
    )
    def get(self, request, agent_id):
        agent = self.get_agent(agent_id)
        if not access.is_reviewer(request.user):
            self.check_token_admin(agent)
        return self.paginate(agent.user.api_tokens.order_by("-created_at"), s.TokenOutputSerializer)

    @extend_schema(request=s.TokenInputSerializer, responses={201: s.TokenCreatedSerializer})
    def post(self, request, agent_id):
        agent = self.get_agent(agent_id)
        self.check_token_admin(agent)
        data = s.TokenInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        expires_at = values.get("expires_at")
        if values.get("expires_in_days"):
            expires_at = timezone.now() + timedelta(days=values["expires_in_days"])
        token, raw = services.token_issue(
            actor=request.user, user=agent.user, name=values.get("name", ""), expires_at=expires_at
        )
        body = s.TokenOutputSerializer(token).data
        body["token"] = raw
        return Response(body, status=201)


class AgentTokenDetailView(AgentAccessMixin):
    @extend_schema(
        responses={200: s.TokenOutputSerializer},
        description="Revokes the token; answers it, revoked.",
    )
    def delete(self, request, agent_id, token_id):
        agent = self.get_agent(agent_id)
        self.check_token_admin(agent)
        token = ApiToken.objects.filter(pk=token_id, user=agent.user).first()
        if token is None:
            raise NotFound("Token not found.", code="token_not_found")
        token = services.token_revoke(actor=request.user, token=token)
        return Response(s.TokenOutputSerializer(token).data)


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
        require_platform_admin(request.user)
        data = s.GrantInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        tool = _tool_or_404(values["tool_id"]) if values.get("tool_id") else None
        role = _role_or_404(values["role_id"])
        grant, created = services.grant_create(
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
        require_platform_admin(request.user)
        data = s.BulkGrantInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        tool = _tool_or_404(values["tool_id"]) if values.get("tool_id") else None
        roles = [_role_or_404(rid) for rid in dict.fromkeys(values["role_ids"])]
        with transaction.atomic():
            grants = [
                services.grant_create(
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
        require_platform_admin(request.user)
        services.grant_revoke(actor=request.user, grant=self.get_grant(grant_id))
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


# Discovery


def discovery_queryset(qs):
    return qs.prefetch_related(
        Prefetch("parameters", queryset=ToolParameter.objects.order_by("position", "name")),
        Prefetch("configs", queryset=ToolConfig.objects.filter(config_key="headers_input_map")),
    ).order_by("name")


class RegistryMeView(BaseAPIView):
    known_query_params = ("format",)

    @extend_schema(
        parameters=[OpenApiParameter("format", str, enum=list(formats.FORMATS), default="raw")],
        responses={200: dict},
        description="The active tools the caller may execute, in an LLM provider's tool format.",
    )
    def get(self, request):
        fmt = query_choice(request.query_params, "format", formats.FORMATS) or "raw"
        qs = self.tool_queryset(Action.EXECUTE).filter(is_active=True)
        tools = list(discovery_queryset(qs))
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
        if role is None or not access.may_ask_about_role(self.request.user, role):
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
        ids = access.tools_for_role(role, action).values("pk")
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
        tool = self.tool_queryset().filter(pk=tool_id).first()
        if tool is None:
            raise NotFound("Tool not found.", code="tool_not_found")
        role = RegistryByRoleView.role_from_kwargs(self, role_id=role_id)
        # The seed's default: whether the role may run the tool.
        required = (
            query_choice(request.query_params, "required_action", Action.values) or Action.EXECUTE
        )
        granted = access.granted_action(role, tool)
        allowed = access.role_can(role, required, tool)
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
