"""Pinned definitions in the API: a tool's definition state, an admin's decision on a
pending one, and an MCP server's drift report.

Reading a tool's definition state needs ``manage`` on it (or platform admin or
reviewer); deciding needs platform admin; the drift report is for platform admins
and reviewers. Decisions are audited by the service.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from registry import authorization
from registry.api.admin_checks import require_admin_or_reviewer
from registry.api.mcp_views import get_mcp_server
from registry.api.views import RegistryAPIView
from registry.drift import mcp_server_drift, tool_definition_state
from registry.models import Action, Tool
from registry.policy import policy_check
from registry.services import pinning
from toolhub.api.openapi.errors import errors
from toolhub.api.serializers import StrictSerializer
from toolhub.exceptions import PermissionDenied


class DecisionInputSerializer(StrictSerializer):
    reason = serializers.CharField(allow_blank=True, max_length=2000, required=False, default="")


class ToolDefinitionView(RegistryAPIView):
    @extend_schema(responses={200: dict, **errors(403)})
    def get(self, request, tool_id):
        tool = self.get_tool(tool_id)
        user = request.user
        if not (
            authorization.is_platform_admin(user)
            or authorization.is_reviewer(user)
            or authorization.can(user, Action.MANAGE, tool)
        ):
            raise PermissionDenied(
                "Only the tool's managers, platform admins and reviewers see its definitions."
            )
        return Response(tool_definition_state(tool))


class ToolDefinitionDecisionView(RegistryAPIView):
    decide = None  # the service: approve or reject

    @extend_schema(request=DecisionInputSerializer, responses={200: dict, **errors(403, 409)})
    def post(self, request, tool_id):
        tool = self.get_tool(tool_id)
        policy_check(actor=request.user, action="definition.decide")
        data = DecisionInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        type(self).decide(actor=request.user, tool=tool, reason=data.validated_data["reason"])
        return Response(tool_definition_state(Tool.objects.get(pk=tool.pk)))


class ToolDefinitionApproveView(ToolDefinitionDecisionView):
    decide = staticmethod(pinning.tool_definition_approve)


class ToolDefinitionRejectView(ToolDefinitionDecisionView):
    decide = staticmethod(pinning.tool_definition_reject)


class MCPServerDriftView(RegistryAPIView):
    @extend_schema(responses={200: dict, **errors(403)})
    def get(self, request, server_id):
        require_admin_or_reviewer(request.user)
        return Response(mcp_server_drift(get_mcp_server(server_id)))
