"""Writes for MCP servers, each audited with the token masked, and the server's connection spec.

Deleting a server deactivates the tools synced from it (audited, one event per
tool) and removes the server row; the tools stay, inactive, as history (their
executions keep pointing at them). Disabling a server does the same to its
tools without removing it; a later sync of the re-enabled server reactivates
them.

The sync itself needs the MCP client, which lives in ``executions`` (and
``registry`` never imports ``executions``). ``executions`` registers its sync
function here when its app is ready (``mcp_sync_handler_register``); the admin
calls it through ``mcp_server_sync_run``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from registry import crypto
from registry.models import MCPServer, Tool
from registry.models.mcp import (
    MCPTransport,
    env_problem,
    stdio_command_problem,
    token_env_var_problem,
)
from registry.models.mcp.server import MCP_SERVER_FIELDS
from registry.models.tools import ToolType
from registry.policy import policy_check
from registry.services.audit import audit_record
from registry.services.tools import tool_update
from registry.services.validation import full_clean, raise_invalid
from toolhub.exceptions import Conflict, ToolHubError

# tool_metadata keys that tie a synced tool to its server.
META_SERVER = "mcp_server"
META_SERVER_ID = "mcp_server_id"
META_REMOTE_NAME = "remote_tool_name"
META_LISTED_NAME = "mcp_listed_name"  # the name the last sync gave it (a rename here differs)
META_SYNC_STATE = "mcp_sync_state"  # set when a sync (or the server's removal) deactivated it


class MCPServerUnavailable(ToolHubError):
    """The server cannot be used now (disabled, token missing from the environment…)."""

    status_code = 409
    code = "mcp_server_unavailable"


def mcp_server_snapshot(server: MCPServer) -> dict[str, Any]:
    data = {field: getattr(server, field) for field in MCP_SERVER_FIELDS}
    data["id"] = str(server.pk)
    data["env"] = server.masked_env()
    data["auth_token"] = crypto.MASK if server.has_auth_token else None
    return data


def mcp_server_tools(server: MCPServer | str) -> QuerySet[Tool]:
    """The tools synced from ``server`` (by id, so they survive a rename)."""
    server_id = str(server.pk if isinstance(server, MCPServer) else server)
    return Tool.objects.filter(type=ToolType.MCP, **{f"tool_metadata__{META_SERVER_ID}": server_id})


def mcp_server_for_tool(tool: Tool) -> MCPServer | None:
    """The server an ``mcp`` tool was synced from (by its ``server_id`` config or metadata)."""
    server_id = None
    for config in tool.configs.all():
        if config.config_key == "server_id" and not config.is_secret:
            server_id = config.plain_value
    server_id = server_id or (tool.tool_metadata or {}).get(META_SERVER_ID)
    if not server_id:
        return None
    try:
        return MCPServer.objects.filter(pk=server_id).first()
    except (ValueError, TypeError, ValidationError):
        return None


def _unique_or_conflict(name: str, exclude_pk=None) -> None:
    qs = MCPServer.objects.filter(name=name)
    if exclude_pk is not None:
        qs = qs.exclude(pk=exclude_pk)
    if qs.exists():
        raise Conflict(
            f"An MCP server named '{name}' already exists.",
            code="duplicate_name",
            details=[{"field": "name", "message": "Already in use.", "code": "unique"}],
        )


def _save(server: MCPServer) -> None:
    try:
        with transaction.atomic():
            server.save()
    except IntegrityError as exc:
        raise Conflict(
            f"An MCP server named '{server.name}' already exists.",
            code="duplicate_name",
            details=[{"field": "name", "message": "Already in use.", "code": "unique"}],
        ) from exc


def _check_token(token: Any) -> None:
    if token is not None and not isinstance(token, str):
        raise_invalid([{"field": "auth_token", "message": "Must be a string.", "code": "invalid"}])


def _check_token_env_var(name: Any) -> None:
    """A variable the allow-list admits, checked whenever it is set (not on every save:
    a server saved before the list narrowed stays editable; its calls are refused)."""
    if isinstance(name, str) and name:
        problem = token_env_var_problem(name)
        if problem:
            raise_invalid([{"field": "token_env_var", "message": problem, "code": "invalid"}])


_LAUNCH_FIELDS = ("transport", "command", "args")


def _check_stdio_command(server: MCPServer) -> None:
    """A stdio server's command must be one ``TOOLHUB_MCP_STDIO_COMMANDS`` allows; checked
    when the command, its arguments or the transport are set (a server saved before the
    list narrowed stays editable; its syncs and calls are refused)."""
    if server.transport != MCPTransport.STDIO:
        return
    problem = stdio_command_problem(server.command, server.args)
    if problem:
        raise_invalid([{"field": "command", "message": problem, "code": "not_allowed"}])


def _apply_env(server: MCPServer, env: Any) -> list[str]:
    """Validate and store ``env`` (``None`` clears it); the names whose value changed."""
    env = {} if env is None else env
    problem = env_problem(env, server.stored_env())
    if problem:
        raise_invalid([{"field": "env", "message": problem, "code": "invalid"}])
    return server.set_env(env)


@transaction.atomic
def mcp_server_create(
    *,
    actor,
    name: str,
    auth_token: str | None = None,
    env: dict[str, str] | None = None,
    **fields: Any,
) -> MCPServer:
    """Register a server. ``auth_token`` and the values of ``env`` are stored encrypted."""
    unknown = set(fields) - set(MCP_SERVER_FIELDS)
    if unknown:
        raise TypeError(f"unknown MCP server fields: {sorted(unknown)}")
    policy_check(actor=actor, action="mcp_server.write")
    _check_token(auth_token)
    server = MCPServer(name=name, **fields)
    server.set_auth_token(auth_token)
    _apply_env(server, env)
    full_clean(server)  # the format first, then whether it may be named
    _check_token_env_var(server.token_env_var)
    _check_stdio_command(server)
    _unique_or_conflict(name)
    _save(server)
    audit_record(
        actor=actor, action="mcp_server.created", target=server, after=mcp_server_snapshot(server)
    )
    return server


_UNSET = object()


@transaction.atomic
def mcp_server_update(
    *, actor, server: MCPServer, data: dict[str, Any], auth_token: Any = _UNSET
) -> MCPServer:
    """Change fields; ``auth_token`` replaces the stored token (``None`` or ``""`` clears it).

    ``env`` in ``data`` replaces the whole environment; a value equal to the
    mask keeps that variable's stored value (so what a read shows can be sent
    back). Disabling the server deactivates its tools. A rename reaches the
    tools' names at the next sync (they are tied to the server by id).
    """
    policy_check(actor=actor, action="mcp_server.write")
    data = dict(data)
    env_given = "env" in data
    env = data.pop("env", None)
    unknown = set(data) - set(MCP_SERVER_FIELDS)
    if unknown:
        raise TypeError(f"unknown MCP server fields: {sorted(unknown)}")
    server = MCPServer.objects.select_for_update().get(pk=server.pk)
    before = mcp_server_snapshot(server)
    old_token = server.encrypted_auth_token
    for field, value in data.items():
        setattr(server, field, value)
    env_changed = _apply_env(server, env) if env_given else []
    token_changed = _replace_token(server, auth_token, old_token)
    full_clean(server)
    _check_changed_fields(server, before)
    after = mcp_server_snapshot(server)
    if after == before and not token_changed and not env_changed:
        return server
    _save(server)
    if token_changed:
        # Both snapshots show only the mask; say that the token itself changed.
        after["auth_token_changed"] = True
    if env_changed:
        after["env_changed"] = env_changed  # names only, never values
    audit_record(
        actor=actor, action="mcp_server.updated", target=server, before=before, after=after
    )
    _follow_with_tools(actor, server, before)
    return server


def _replace_token(server: MCPServer, auth_token: Any, old_token: str) -> bool:
    """Set (or clear, when falsy) the stored token unless ``_UNSET``; did it change?"""
    if auth_token is _UNSET:
        return False
    _check_token(auth_token)
    if not auth_token:
        server.set_auth_token(None)
        return bool(old_token)
    token_changed = auth_token != server.stored_auth_token()
    if token_changed:
        server.set_auth_token(auth_token)
    return token_changed


def _check_changed_fields(server: MCPServer, before: dict[str, Any]) -> None:
    """The checks that only a changed token variable, launch command or name needs."""
    if server.token_env_var != before["token_env_var"]:
        _check_token_env_var(server.token_env_var)
    if any(getattr(server, f) != before[f] for f in _LAUNCH_FIELDS):
        _check_stdio_command(server)
    if server.name != before["name"]:
        _unique_or_conflict(server.name, exclude_pk=server.pk)


def _follow_with_tools(actor, server: MCPServer, before: dict[str, Any]) -> None:
    """The server's tools follow its update: disabled, re-enabled, or newly filtered out."""
    if before["is_enabled"] and not server.is_enabled:
        _deactivate_tools(actor=actor, server=server, reason="server_disabled")
    elif server.is_enabled and not before["is_enabled"]:
        _reactivate_tools(actor=actor, server=server)
    if (before["tools_allowed"], before["tools_denied"]) != (
        server.tools_allowed,
        server.tools_denied,
    ):
        # Tools the filters now exclude stop at admission (409 tool_inactive)
        # rather than failing when they run; the next sync decides about
        # those the new filters let through again.
        _deactivate_tools(actor=actor, server=server, reason="denied", only_denied=True)


def mcp_remote_tool_name(tool: Tool) -> str:
    """The remote tool an ``mcp`` tool calls: its ``remote_tool_name`` config (stored when
    it was linked), never its own name; empty when it has none (its calls fail)."""
    for config in tool.configs.all():
        if config.config_key == "remote_tool_name" and not config.is_secret:
            return str(config.plain_value or "")
    return ""


def _reactivate_tools(*, actor, server: MCPServer) -> list[str]:
    """Bring back the tools disabling the server deactivated (not those a sync removed or
    the server's filters deny: the next sync decides about them)."""
    names = []
    for tool in mcp_server_tools(server).filter(is_active=False):
        meta = dict(tool.tool_metadata or {})
        if meta.get(META_SYNC_STATE) != "server_disabled":
            continue
        if not server.offers(mcp_remote_tool_name(tool)):
            if meta.get(META_SYNC_STATE) != "denied":
                meta[META_SYNC_STATE] = "denied"  # stays off; a sync may bring it back
                tool_update(actor=actor, tool=tool, data={"tool_metadata": meta})
            continue
        meta[META_SYNC_STATE] = None
        tool_update(actor=actor, tool=tool, data={"is_active": True, "tool_metadata": meta})
        names.append(tool.name)
    return names


def _deactivate_tools(
    *, actor, server: MCPServer, reason: str, only_denied: bool = False
) -> list[str]:
    """Deactivate the server's active tools (``only_denied``: those its filters exclude)."""
    names = []
    for tool in mcp_server_tools(server).filter(is_active=True):
        if only_denied and server.offers(mcp_remote_tool_name(tool)):
            continue
        meta = dict(tool.tool_metadata or {}, **{META_SYNC_STATE: reason})
        tool_update(actor=actor, tool=tool, data={"is_active": False, "tool_metadata": meta})
        names.append(tool.name)
    return names


@transaction.atomic
def mcp_server_delete(*, actor, server: MCPServer) -> list[str]:
    """Deactivate the server's tools, then remove the server. Returns the deactivated names."""
    policy_check(actor=actor, action="mcp_server.write")
    server = MCPServer.objects.select_for_update().get(pk=server.pk)
    snapshot = mcp_server_snapshot(server)
    deactivated = _deactivate_tools(actor=actor, server=server, reason="server_deleted")
    snapshot["tools_deactivated"] = deactivated
    server_id, server_repr = str(server.pk), str(server)
    server.delete()
    audit_record(
        actor=actor,
        action="mcp_server.deleted",
        target_type=MCPServer._meta.label_lower,
        target_id=server_id,
        target_repr=server_repr,
        before=snapshot,
    )
    return deactivated


def mcp_server_token(server: MCPServer) -> str | None:
    """The bearer token now: from ``token_env_var`` (read at call time) or the stored secret."""
    if server.token_env_var:
        # Checked again at call time: the allow-list may have narrowed since the save.
        problem = token_env_var_problem(server.token_env_var)
        if problem:
            raise MCPServerUnavailable(
                f"MCP server '{server.name}': {problem}", code="mcp_token_not_allowed"
            )
        token = os.environ.get(server.token_env_var)
        if not token:
            raise MCPServerUnavailable(
                f"MCP server '{server.name}': environment variable {server.token_env_var} "
                "(its token) is not set.",
                code="mcp_token_missing",
            )
        return token
    return server.stored_auth_token()


def mcp_server_spec(server: MCPServer) -> dict[str, Any]:
    """The mapping ``executions.mcp_client.MCPServerSpec.from_mapping`` takes (token resolved)."""
    spec: dict[str, Any] = {
        "name": server.name,
        "transport": server.transport,
        "timeout_seconds": server.timeout_seconds,
        "auth_token": mcp_server_token(server),
    }
    if server.transport == "stdio":
        spec.update(command=server.command, args=list(server.args or []), env=server.stored_env())
    else:
        spec["url"] = server.url
    return spec


# Sync hook: executions registers the function that lists a server's tools and upserts them.

_sync_handler: Callable[..., Any] | None = None


def mcp_sync_handler_register(handler: Callable[..., Any]) -> None:
    """Install ``handler(*, actor, server) -> report`` (called by executions when ready)."""
    global _sync_handler
    _sync_handler = handler


def mcp_server_sync_run(*, actor, server: MCPServer):
    """Sync ``server`` with the registered handler (its report has ``ok``, ``error``, ``summary()``)."""
    policy_check(actor=actor, action="mcp_server.write")
    if _sync_handler is None:
        raise ToolHubError(
            "Syncing MCP servers needs the executions app, which is not installed.",
            code="mcp_sync_unavailable",
        )
    return _sync_handler(actor=actor, server=server)
