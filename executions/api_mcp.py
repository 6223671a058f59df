"""``POST /api/v1/mcp-servers/{id}/sync`` (platform admins): list the server's tools and upsert them.

Lives in ``executions`` because it needs the MCP client. Include it under
``api/v1/`` in ``toolhub/urls.py``: ``path("", include("executions.api_mcp"))``.

A failed sync answers with the error shape and the report in ``details``:
409 when the server's settings are at fault (disabled, token missing, command
not allowlisted, egress refused), 502 when the server itself failed.
"""

from __future__ import annotations

from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from executions.mcp_sync import UPSTREAM_ERRORS, mcp_server_sync
from registry.api.access_views import require_platform_admin
from registry.api.base import BaseAPIView
from registry.api.mcp_views import get_mcp_server
from toolhub.api.exceptions import error_body


class MCPServerSyncView(BaseAPIView):
    @extend_schema(request=None, responses={200: dict, 409: dict, 502: dict})
    def post(self, request, server_id):
        require_platform_admin(request.user)
        report = mcp_server_sync(actor=request.user, server=get_mcp_server(server_id))
        if report.ok:
            return Response(report.as_dict())
        status = 502 if report.error_code in UPSTREAM_ERRORS else 409
        body = error_body(report.error_code, f"Sync failed: {report.error}", report.as_dict())
        return Response(body, status=status)


urlpatterns = [
    path("mcp-servers/<uuid:server_id>/sync", MCPServerSyncView.as_view(), name="mcp-server-sync"),
]
