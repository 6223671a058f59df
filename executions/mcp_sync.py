"""Sync an MCP server's tools into the registry: ``mcp_server_sync(*, actor, server) -> SyncReport``.

The server is asked for its tools (``tools/list``) outside any transaction;
then, in one transaction, one ``mcp`` tool per allowed tool is upserted
through the registry services (audited; nothing is written or audited for a
tool that did not change):

* named ``<prefix><tool>``, the prefix being the server's ``tool_prefix`` (by
  default ``<server>__``; empty: the upstream's own name), sanitized to
  ``[a-zA-Z0-9_-]``, at most 64. A name another tool holds is refused, naming
  both (the new tool is skipped; a listed one keeps its name). A rename made in
  ToolHub stays: the sync keeps the name it gave in ``mcp_listed_name`` and only
  renames a tool still under that name (the prefix or the server's name changed);
* description from the server; input parameters from the tool's
  ``inputSchema`` (``registry.schema_rows`` explains how properties
  without a single type are represented);
* ``tool_metadata`` ``{"mcp_server", "mcp_server_id", "remote_tool_name",
  "mcp_listed_name"}``
  and configs ``remote_tool_name`` and ``server_id``, by which the executor
  finds the server;
* new tools get no grants (only all-tools grants reach them).

Pinned definitions (``registry.services.pinning``): the first sync of a server
records each tool's definition as the server gives it as approved. Later, a
tool whose definition differs from its approved one is not updated: it is
quarantined with the new definition kept beside the old (``quarantined``); a
tool that shows its approved definition again leaves quarantine (``restored``);
a tool that appears after the first sync starts quarantined.

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
from registry.canonical import canonical_json, stored_form
from registry.definitions import definition_hash, remote_definition
from registry.importers import naming
from registry.models import MCPServer, Tool
from registry.models.tools import DefinitionSource, QuarantineReason, ToolType
from registry.schema import parameter_schema
from registry.schema_rows import SchemaProblem, schema_to_rows
from registry.services import mcp as mcp_services
from registry.services import pinning
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
    quarantined: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def upstream_failed(self) -> bool:
        """The server itself failed (unreachable, timed out, a protocol error), not its settings."""
        return self.error_code in UPSTREAM_ERRORS

    @property
    def changed(self) -> bool:
        return bool(
            self.created or self.updated or self.deactivated or self.quarantined or self.restored
        )

    def summary(self) -> str:
        if not self.ok:
            return f"{self.server}: sync failed: {self.error}"
        parts = [
            f"{len(self.created)} created",
            f"{len(self.updated)} updated",
            f"{len(self.unchanged)} unchanged",
            f"{len(self.deactivated)} deactivated",
        ]
        if self.quarantined:
            parts.append(f"{len(self.quarantined)} quarantined (definition changed or new)")
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
            "quarantined": self.quarantined,
            "restored": self.restored,
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
    report.quarantined, report.restored = [], []
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
    MCPServer.objects.filter(pk=server.pk).update(last_sync_attempt_at=timezone.now())
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
                        "quarantined": report.quarantined,
                        "restored": report.restored,
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
    kept: set[str] = set()
    used: dict[str, str] = {}  # name given in this sync -> the remote tool it is for
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
        definition = remote_definition(item)
        if tool is not None and _held(report, actor, tool, definition, rows):
            continue
        name = _listed_name(report, server, remote_name, tool, used)
        if name is None:
            continue
        used[name] = remote_name
        # What the sync named it: the new name, or, through a rename made here, the old one.
        renamed = tool is not None and _renamed_here(tool)
        listed = _listed_before(tool) if renamed else name
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
                        mcp_services.META_LISTED_NAME: listed,
                    },
                    parameters=rows,
                    configs={"remote_tool_name": remote_name, "server_id": str(server.pk)},
                )
        except ToolHubError as exc:
            report.skipped.append({"tool": remote_name, "reason": exc.message})
            continue
        getattr(report, result.action).append(result.tool.name)
        report.warnings += [f"{result.tool.name}: {note}" for note in notes]
        _pin_synced(report, actor, server, result.tool, definition, new=tool is None)
    for remote_name, tool in existing.items():
        if remote_name in kept or not tool.is_active:
            continue
        state = "denied" if not server.offers(remote_name) else "vanished"
        meta = {**(tool.tool_metadata or {}), mcp_services.META_SYNC_STATE: state}
        tool_update(actor=actor, tool=tool, data={"is_active": False, "tool_metadata": meta})
        report.deactivated.append(tool.name)


def _listed_name(
    report: SyncReport, server: MCPServer, remote_name: str, tool: Tool | None, used: dict
) -> str | None:
    """The name the server's tool ``remote_name`` is listed under. A name given in ToolHub
    (a rename) stays through every sync; otherwise it is the server's prefix and the
    upstream's name. A name that another tool holds is refused, naming both: a new tool
    is skipped, a listed one keeps the name it has."""
    if tool is not None and _renamed_here(tool):
        return tool.name
    desired = naming.clean(f"{server.listed_prefix}{remote_name}")
    if tool is not None and tool.name == desired:
        return desired
    holder = _holder(desired, tool, used)
    if holder is None:
        return desired
    if tool is None:
        report.skipped.append(
            {
                "tool": remote_name,
                "reason": (
                    f"its name '{desired}' is taken by {holder}; rename that tool, or set "
                    "this server's tool prefix"
                ),
            }
        )
        return None
    report.warnings.append(f"{tool.name}: not renamed to '{desired}', which is {holder}'s name")
    return tool.name


def _listed_before(tool: Tool) -> str | None:
    """The name the last sync gave ``tool`` (None for a tool synced before names were kept:
    then one that starts with its server's name then was named by the sync)."""
    meta = tool.tool_metadata or {}
    listed = meta.get(mcp_services.META_LISTED_NAME)
    if listed is None and tool.name.startswith(f"{meta.get(mcp_services.META_SERVER)}__"):
        return tool.name
    return listed


def _renamed_here(tool: Tool) -> bool:
    """Whether someone renamed ``tool`` in ToolHub after a sync named it."""
    return tool.name != _listed_before(tool)


def _holder(name: str, tool: Tool | None, used: dict[str, str]) -> str | None:
    """Who holds ``name`` besides ``tool``, for a message; None when it is free."""
    if name in used:
        return f"this server's tool '{used[name]}'"
    others = Tool.objects.filter(name=name)
    if tool is not None:
        others = others.exclude(pk=tool.pk)
    other = others.only("name", "type", "tool_metadata").first()
    if other is None:
        return None
    server = (other.tool_metadata or {}).get(mcp_services.META_SERVER)
    if other.type == ToolType.MCP and server:
        remote = (other.tool_metadata or {}).get(mcp_services.META_REMOTE_NAME)
        return f"tool '{other.name}' (tool '{remote}' of MCP server '{server}')"
    return f"tool '{other.name}' ({other.type})"


def _says_the_same(tool: Tool, definition: dict, rows: list[dict]) -> bool:
    """Whether a server's definition says what the registry's own definition of the tool
    (recorded when it was registered by hand, or before definitions were pinned) says:
    the description and each input as the model reads it (its schema: type,
    description, constraints, default) and whether it is required. Any of these
    differing is a change to review, not a first sight (a poisoned instruction hides
    in a parameter's description as well as in the tool's)."""
    stored = {
        p.name: _input_form(
            p.type, p.json_schema, p.description, p.required, p.has_default, p.default
        )
        for p in tool.parameters.all()
        if p.parameter_type == "input"
    }
    given = {
        r["name"]: _input_form(
            r.get("type", "string"),
            r.get("json_schema"),
            r.get("description") or "",
            bool(r.get("required")),
            "default" in r,
            r.get("default"),
        )
        for r in rows
    }
    return tool.description == definition["description"] and stored == given


def _input_form(type_, fragment, description, required, has_default, default) -> tuple:
    """One input as a definition shows it (its JSON Schema, canonical), and if required."""
    form = parameter_schema(
        type_, fragment, description or "", has_default=has_default, default=default
    )
    return canonical_json(stored_form(form)), required


def _held(report: SyncReport, actor, tool: Tool, definition: dict, rows: list[dict]) -> bool:
    """Quarantine ``tool`` if ``definition`` is not its approved one (then it is not
    updated); lift the quarantine of one whose server shows its approved one again."""
    pinned_remote = tool.approved_definition_source == DefinitionSource.MCP_SERVER
    if not pinned_remote and tool.quarantine_reason != QuarantineReason.NEW_TOOL:
        if _says_the_same(tool, definition, rows):
            return False  # the first sight of the server's definition: pinned after the upsert
    elif definition_hash(definition) == tool.approved_definition_hash:
        if pinning.tool_definition_restore(actor=actor, tool=tool):
            report.restored.append(tool.name)
        return False
    if pinning.tool_definition_hold(actor=actor, tool=tool, definition=definition, seen_in="sync"):
        report.quarantined.append(tool.name)
    else:
        report.unchanged.append(tool.name)
    return True


def _pin_synced(
    report: SyncReport, actor, server: MCPServer, tool: Tool, definition: dict, *, new: bool
) -> None:
    """After an upsert: pin the server's definition, or, for a tool that appeared after
    the server's first sync, hold it (the tool starts quarantined, with no grants)."""
    if tool.approved_definition_source == DefinitionSource.MCP_SERVER and not new:
        return
    if new and server.last_synced_at is not None:
        Tool.objects.filter(pk=tool.pk).update(
            approved_definition={},
            approved_definition_hash="",
            approved_definition_source=DefinitionSource.MCP_SERVER,
        )
        pinning.tool_definition_hold(
            actor=actor,
            tool=tool,
            definition=definition,
            seen_in="sync",
            reason=QuarantineReason.NEW_TOOL,
        )
        report.quarantined.append(tool.name)
        return
    pinning.tool_definition_pin(tool=tool, definition=definition)


def mcp_definition_apply(*, actor, tool: Tool, definition: dict) -> None:
    """An approved definition reaches the tool's description and input parameters."""
    try:
        rows = schema_to_rows(definition.get("input_schema") or {}, warnings=[])
    except SchemaProblem as exc:
        raise ToolHubError(
            f"The approved definition's input schema cannot be represented: {exc.message}",
            code="definition_not_representable",
        ) from None
    tool_upsert(
        actor=actor,
        name=tool.name,
        tool=tool,
        fields={"description": str(definition.get("description") or "")},
        parameters=rows,
    )
