"""API for agents and their tokens."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from registry import authorization
from registry.api import agent_serializers as s
from registry.api.base import BaseAPIView
from registry.models import Agent, ApiToken
from registry.policy import policy_check
from registry.services import agents as agent_services
from registry.services import tokens as token_services
from toolhub.api.openapi.errors import errors
from toolhub.api.openapi.pages import page_parameters, paginated
from toolhub.api.params import parse_id
from toolhub.exceptions import InvalidInput, NotFound


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


# Agents


def _agent_qs():
    return Agent.objects.select_related("owner", "user").prefetch_related("user__groups")


class AgentAccessMixin(BaseAPIView):
    """Which agents the caller sees, and who manages their tokens (no HTTP methods here)."""

    def visible_agents(self):
        user = self.request.user
        qs = _agent_qs()
        if authorization.is_platform_admin(user) or authorization.is_reviewer(user):
            return qs
        # People see the agents they own; an agent sees itself.
        return qs.filter(owner=user) | qs.filter(user=user)

    def get_agent(self, agent_id) -> Agent:
        agent = self.visible_agents().filter(pk=agent_id).first()
        if agent is None:
            raise NotFound("Agent not found.", code="agent_not_found")
        return agent

    def check_token_admin(self, agent: Agent) -> None:
        """Who reads an agent's tokens, and a refusal before a body is read (the token
        services check it again, whoever calls them)."""
        policy_check(actor=self.request.user, action="token.write", owner=agent.owner)


class AgentListView(AgentAccessMixin):
    @extend_schema(parameters=page_parameters(), responses=paginated(s.AgentOutputSerializer))
    def get(self, request):
        return self.paginate(self.visible_agents().order_by("name"), s.AgentOutputSerializer)

    @extend_schema(
        request=s.AgentInputSerializer, responses={201: s.AgentOutputSerializer, **errors(409)}
    )
    def post(self, request):
        policy_check(actor=request.user, action="agent.write")  # before the body is read
        data = s.AgentInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        values["owner"] = _find_user(values["owner"])
        agent = agent_services.agent_create(actor=request.user, **values)
        return Response(s.AgentOutputSerializer(_agent_qs().get(pk=agent.pk)).data, status=201)


class AgentDetailView(AgentAccessMixin):
    @extend_schema(responses=s.AgentOutputSerializer)
    def get(self, request, agent_id):
        return Response(s.AgentOutputSerializer(self.get_agent(agent_id)).data)

    @extend_schema(
        request=s.AgentUpdateSerializer,
        responses={200: s.AgentOutputSerializer, **errors(409)},  # the last platform admin
    )
    def patch(self, request, agent_id):
        agent = self.get_agent(agent_id)
        policy_check(actor=request.user, action="agent.write")  # before the body is read
        data = s.AgentUpdateSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        if "owner" in values:
            values["owner"] = _find_user(values["owner"])
        agent_services.agent_update(actor=request.user, agent=agent, data=values)
        return Response(s.AgentOutputSerializer(_agent_qs().get(pk=agent.pk)).data)

    @extend_schema(
        responses={204: None}, description="Deactivates the agent: all its tokens stop working."
    )
    def delete(self, request, agent_id):
        agent = self.get_agent(agent_id)
        agent_services.agent_update(actor=request.user, agent=agent, data={"is_active": False})
        return Response(status=204)


class AgentTokenListView(AgentAccessMixin):
    @extend_schema(
        parameters=page_parameters(),
        responses={200: paginated(s.TokenOutputSerializer), **errors(403)},
    )
    def get(self, request, agent_id):
        agent = self.get_agent(agent_id)
        if not authorization.is_reviewer(request.user):
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
        token, raw = token_services.token_issue(
            actor=request.user, user=agent.user, name=values.get("name", ""), expires_at=expires_at
        )
        body = s.TokenOutputSerializer(token).data
        body["token"] = raw
        return Response(body, status=201)


class AgentTokenDetailView(AgentAccessMixin):
    @extend_schema(
        responses={200: s.TokenOutputSerializer, **errors(409)},  # the last platform admin
        description="Revokes the token; answers it, revoked.",
    )
    def delete(self, request, agent_id, token_id):
        agent = self.get_agent(agent_id)
        self.check_token_admin(agent)
        token = ApiToken.objects.filter(pk=token_id, user=agent.user).first()
        if token is None:
            raise NotFound("Token not found.", code="token_not_found")
        token = token_services.token_revoke(actor=request.user, token=token)
        return Response(s.TokenOutputSerializer(token).data)
