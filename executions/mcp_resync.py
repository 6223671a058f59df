"""Re-syncing MCP servers on their own intervals (Celery beat's ``executions.resync_mcp_servers``).

Each server's ``sync_interval_minutes`` says how often it is re-synced; beat asks
every ``TOOLHUB_MCP_RESYNC_CHECK_INTERVAL`` seconds which are due. The sync itself
is ``executions.mcp_sync.mcp_server_sync``.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.utils import timezone

from executions.mcp_sync import mcp_server_sync
from registry.models import MCPServer

logger = logging.getLogger(__name__)


def mcp_servers_due(now=None) -> list[MCPServer]:
    """Enabled servers with a re-sync interval, synced before, whose last attempt is older
    than their interval. A server never synced waits for an admin's first sync: that
    one pins its tools' definitions as approved."""
    now = now or timezone.now()
    servers = MCPServer.objects.filter(
        is_enabled=True, sync_interval_minutes__gt=0, last_synced_at__isnull=False
    )
    return [
        server
        for server in servers
        if (server.last_sync_attempt_at or server.last_synced_at)
        <= now - timedelta(minutes=server.sync_interval_minutes)
    ]


def mcp_servers_resync_due(*, now=None) -> dict[str, Any]:
    """Re-sync every due server (Celery beat); one server's failure does not stop the rest."""
    reports = [mcp_server_sync(actor=None, server=server) for server in mcp_servers_due(now)]
    for report in reports:
        if report.quarantined:
            logger.warning("%s", report.summary())
    return {
        "synced": [r.server for r in reports if r.ok],
        "failed": [r.server for r in reports if not r.ok],
        "quarantined": [name for r in reports for name in r.quarantined],
    }
