"""Sync an MCP server's tools into the registry: ``mcp_server_sync(*, actor, server) -> SyncReport``.

The server is asked for its tools (``tools/list``) outside any transaction;
then, in one transaction, one ``mcp`` tool per allowed tool is upserted
through the registry services (audited; nothing is written or audited for a
tool that did not change):

* named ``<server>__<tool>`` (sanitized to ``[a-zA-Z0-9_-]``, at most 64,
  made unique with ``_2``… when another tool holds the name);
* description from the server; input parameters from the tool's
  ``inputSchema`` (``registry.importers.schema_rows`` explains how properties
  without a single type are represented);
* ``tool_metadata`` ``{"mcp_server", "mcp_server_id", "remote_tool_name"}``
  and configs ``remote_tool_name`` and ``server_id``, by which the executor
  finds the server;
* new tools get no grants (only all-tools grants reach them).

Tools that left the server, or that the allow/deny lists now exclude, are
deactivated (marked ``mcp_sync_state`` so a later sync that sees them again
reactivates them; a tool an admin deactivated stays inactive). A tool whose
schema cannot be represented is skipped and left as it was.

Failures (server down, egress refused, command not allowlisted, token
missing…) write nothing but ``last_sync_error``; the report carries the error.
``mcp_server.synced`` is audited when something changed; a failure is audited
(``mcp_server.sync_failed``) when its error differs from the previous one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from executions import mcp_client
from executions.redaction import redact_text, with_encoded_forms
from registry.importers import naming
from registry.importers.schema_rows import SchemaProblem, schema_to_rows
from registry.models import MCPServer, Tool
from registry.models.tools import ToolType
from registry.services import mcp as mcp_services
from registry.services.audit import audit_record
from registry.services.catalog import tool_upsert
from registry.services.tools import tool_update
from toolhub.exceptions import ToolHubError

logger = logging.getLogger(__name__)

# Error codes of a failed sync, and whether the server (502) or its settings (409) are at fault.
UPSTREAM_ERRORS = {"mcp_unreachable", "mcp_timeout", "mcp_protocol_error", "mcp_error"}


@dataclass
class SyncReport:
    """What a sync did. ``ok`` is False when the server could not be listed (nothing written)."""

    server: str
    server_id: str
    ok: bool = True
    error: str = ""
    error_code: str = ""
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deactivated: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def upstream_failed(self) -> bool:
        """The server itself failed (unreachable, timed out, a protocol error), not its settings."""
        return self.error_code in UPSTREAM_ERRORS

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.deactivated)

    def summary(self) -> str:
        if not self.ok:
            return f"{self.server}: sync failed: {self.error}"
        parts = [
            f"{len(self.created)} created",
            f"{len(self.updated)} updated",
            f"{len(self.unchanged)} unchanged",
            f"{len(self.deactivated)} deactivated",
        ]
        if self.skipped:
            parts.append(f"{len(self.skipped)} skipped")
        return f"{self.server}: " + ", ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "server_id": self.server_id,
            "ok": self.ok,
            "error": self.error,
            "error_code": self.error_code,
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "deactivated": self.deactivated,
            "skipped": self.skipped,
            "warnings": self.warnings,
        }


def _error_code(exc: Exception) -> str:
    return {
        mcp_client.MCPConfigError: "mcp_config_error",
        mcp_client.MCPEgressDenied: "mcp_egress_denied",
        mcp_client.MCPTimeout: "mcp_timeout",
        mcp_client.MCPConnectionError: "mcp_unreachable",
        mcp_client.MCPToolError: "mcp_protocol_error",
    }.get(type(exc), "mcp_error")


def _fail(report: SyncReport, actor, server: MCPServer, code: str, message: str) -> SyncReport:
    report.ok, report.error_code, report.error = False, code, message
    report.created, report.updated, report.unchanged, report.deactivated = [], [], [], []
    with transaction.atomic():
        locked = MCPServer.objects.select_for_update().filter(pk=server.pk).first()
        if locked is None:
            return report
        if locked.last_sync_error != message:
            audit_record(
                actor=actor,
                action="mcp_server.sync_failed",
                target=locked,
                after={"error_code": code, "error": message},
            )
        MCPServer.objects.filter(pk=server.pk).update(last_sync_error=message[:4000])
    return report


def mcp_server_sync(
    *, actor, server: MCPServer, egress_check: Callable[[str], Any] | None = None
) -> SyncReport:
    """List ``server``'s tools and bring its ``mcp`` tools in line (see the module doc)."""
    server = MCPServer.objects.get(pk=server.pk)
    report = SyncReport(server=server.name, server_id=str(server.pk))
    if not server.is_enabled:
        return _fail(report, actor, server, "mcp_server_disabled", "the server is disabled")
    secrets: list[str] = []
    try:
        spec = mcp_services.mcp_server_spec(server)
        secrets += with_encoded_forms(mcp_client.spec_secrets(spec))
        remote = mcp_client.list_tools(spec, egress_check=egress_check)
    except ToolHubError as exc:
        return _fail(report, actor, server, exc.code, exc.message)
    except mcp_client.MCPClientError as exc:
        message = redact_text(str(exc), secrets) or type(exc).__name__
        return _fail(report, actor, server, _error_code(exc), message)
    except Exception as exc:  # a client bug must not become a half-finished sync or a 500
        logger.exception("listing the tools of MCP server %s failed", server.name)
        message = redact_text(f"{type(exc).__name__}: {exc}", secrets)
        return _fail(report, actor, server, "mcp_error", message)
    try:
        with transaction.atomic():
            server = MCPServer.objects.select_for_update().get(pk=server.pk)
            _apply(report, actor, server, remote)
            MCPServer.objects.filter(pk=server.pk).update(
                last_synced_at=timezone.now(), last_sync_error=""
            )
            if report.changed:
                audit_record(
                    actor=actor,
                    action="mcp_server.synced",
                    target=server,
                    after={
                        "created": report.created,
                        "updated": report.updated,
                        "deactivated": report.deactivated,
                        "skipped": [s["tool"] for s in report.skipped],
                    },
                )
    except ToolHubError as exc:
        return _fail(report, actor, server, exc.code, f"the registry refused a change: {exc}")
    except MCPServer.DoesNotExist:
        return _fail(report, actor, server, "mcp_server_not_found", "the server was deleted")
    return report


def _apply(report: SyncReport, actor, server: MCPServer, remote: list[dict]) -> None:
    existing: dict[str, Tool] = {}
    for tool in mcp_services.mcp_server_tools(server).order_by("created_at"):
        existing.setdefault(str(tool.tool_metadata.get(mcp_services.META_REMOTE_NAME)), tool)
    prefix = naming.clean(f"{server.name}__")
    kept: set[str] = set()
    used: set[str] = set()
    for item in remote:
        remote_name = item.get("name")
        if not isinstance(remote_name, str) or not remote_name or remote_name in kept:
            report.warnings.append(f"tool name {remote_name!r} missing or repeated; ignored")
            continue
        if not server.offers(remote_name):
            continue
        kept.add(remote_name)
        notes: list[str] = []
        try:
            rows = schema_to_rows(item.get("input_schema") or {}, warnings=notes)
        except SchemaProblem as exc:
            where = f" at {exc.path}" if exc.path else ""
            report.skipped.append({"tool": remote_name, "reason": f"{exc.message}{where}"})
            continue
        tool = existing.get(remote_name)

        def taken(candidate: str, tool=tool) -> bool:
            clash = Tool.objects.filter(name=candidate)
            if tool is not None:
                clash = clash.exclude(pk=tool.pk)
            return candidate in used or clash.exists()

        desired = naming.namespaced(server.name, remote_name)
        keep_name = tool is not None and tool.name.startswith(prefix) and not taken(tool.name)
        if keep_name and tool.name != desired and not taken(desired):
            keep_name = False  # a suffixed name whose plain form is free again
        name = tool.name if keep_name else naming.unique(desired, taken)
        used.add(name)
        fields: dict[str, Any] = {"description": str(item.get("description") or "")}
        if tool is None:
            fields["timeout_seconds"] = server.timeout_seconds
        elif tool.tool_metadata.get(mcp_services.META_SYNC_STATE):
            fields["is_active"] = True  # deactivated by a sync or by the server: back now
        try:
            with transaction.atomic():
                result = tool_upsert(
                    actor=actor,
                    name=name,
                    type=ToolType.MCP,
                    tool=tool,
                    fields=fields,
                    metadata={
                        mcp_services.META_SERVER: server.name,
                        mcp_services.META_SERVER_ID: str(server.pk),
                        mcp_services.META_REMOTE_NAME: remote_name,
                        mcp_services.META_SYNC_STATE: None,
                    },
                    parameters=rows,
                    configs={"remote_tool_name": remote_name, "server_id": str(server.pk)},
                )
        except ToolHubError as exc:
            report.skipped.append({"tool": remote_name, "reason": exc.message})
            continue
        getattr(report, result.action).append(result.tool.name)
        report.warnings += [f"{result.tool.name}: {note}" for note in notes]
    for remote_name, tool in existing.items():
        if remote_name in kept or not tool.is_active:
            continue
        state = "denied" if not server.offers(remote_name) else "vanished"
        meta = {**(tool.tool_metadata or {}), mcp_services.META_SYNC_STATE: state}
        tool_update(actor=actor, tool=tool, data={"is_active": False, "tool_metadata": meta})
        report.deactivated.append(tool.name)
