"""The MCP server API: platform admins write and sync; platform admins and reviewers read;
others get 403.

Syncing needs the MCP client, which executions registers as the sync handler
(``registry.services.mcp.mcp_sync_handler_register``): the endpoint lives here.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from registry.api.admin_checks import require_admin_or_reviewer
from registry.api.base import BaseAPIView
from registry.api.mcp_serializers import MCPServerInputSerializer, MCPServerOutputSerializer
from registry.models import MCPServer
from registry.policy import policy_check
from registry.services import mcp as services
from toolhub.api.exceptions import error_body
from toolhub.api.openapi.errors import errors
from toolhub.api.openapi.pages import page_parameters, paginated
from toolhub.exceptions import NotFound


def get_mcp_server(server_id) -> MCPServer:
    server = MCPServer.objects.filter(pk=server_id).first()
    if server is None:
        raise NotFound("MCP server not found.", code="mcp_server_not_found")
    return server


class MCPServerListView(BaseAPIView):
    @extend_schema(
        parameters=page_parameters(),
        responses={200: paginated(MCPServerOutputSerializer), **errors(403)},
    )
    def get(self, request):
        require_admin_or_reviewer(request.user)
        return self.paginate(MCPServer.objects.order_by("name"), MCPServerOutputSerializer)

    @extend_schema(
        request=MCPServerInputSerializer,
        responses={201: MCPServerOutputSerializer, **errors(409)},
    )
    def post(self, request):
        policy_check(actor=request.user, action="mcp_server.write")
        data = MCPServerInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        server = services.mcp_server_create(actor=request.user, **data.validated_data)
        return Response(MCPServerOutputSerializer(server).data, status=status.HTTP_201_CREATED)


class MCPServerDetailView(BaseAPIView):
    @extend_schema(responses={200: MCPServerOutputSerializer, **errors(403)})
    def get(self, request, server_id):
        require_admin_or_reviewer(request.user)
        return Response(MCPServerOutputSerializer(get_mcp_server(server_id)).data)

    @extend_schema(
        request=MCPServerInputSerializer,
        responses={200: MCPServerOutputSerializer, **errors(409)},
    )
    def put(self, request, server_id):
        return self._update(request, server_id, partial=False)

    @extend_schema(
        request=MCPServerInputSerializer,
        responses={200: MCPServerOutputSerializer, **errors(409)},
    )
    def patch(self, request, server_id):
        return self._update(request, server_id, partial=True)

    def _update(self, request, server_id, *, partial: bool):
        policy_check(actor=request.user, action="mcp_server.write")
        server = get_mcp_server(server_id)
        data = MCPServerInputSerializer(data=request.data, partial=partial)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        kwargs = {"auth_token": values.pop("auth_token")} if "auth_token" in values else {}
        server = services.mcp_server_update(
            actor=request.user, server=server, data=values, **kwargs
        )
        return Response(MCPServerOutputSerializer(server).data)

    @extend_schema(responses={204: None})
    def delete(self, request, server_id):
        policy_check(actor=request.user, action="mcp_server.write")
        services.mcp_server_delete(actor=request.user, server=get_mcp_server(server_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class MCPServerSyncView(BaseAPIView):
    """List the server's tools and upsert them. A failed sync answers with the error
    shape and the report in ``details``: 502 when the server itself failed, 409 when
    its settings are at fault (disabled, token missing, command not allowed, egress
    refused)."""

    @extend_schema(request=None, responses={200: dict, 409: dict, 502: dict})
    def post(self, request, server_id):
        policy_check(actor=request.user, action="mcp_server.write")
        report = services.mcp_server_sync_run(actor=request.user, server=get_mcp_server(server_id))
        if report.ok:
            return Response(report.as_dict())
        code = 502 if report.upstream_failed else 409
        body = error_body(report.error_code, f"Sync failed: {report.error}", report.as_dict())
        return Response(body, status=code)
