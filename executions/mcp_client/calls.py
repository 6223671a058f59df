"""tools/call: one call of a server's tool."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

import anyio

from executions.mcp_client.checks import _prepare
from executions.mcp_client.content import CallOutcome, _outcome_from_result
from executions.mcp_client.errors import MCPConfigError, MCPDefinitionChanged
from executions.mcp_client.limits import _SYNC_GRACE_SECONDS, EgressCheck
from executions.mcp_client.listing import _all_tools, _fully_listed, listed_tool
from executions.mcp_client.runtime import _get_runtime
from executions.mcp_client.spec import MCPServerSpec
from executions.mcp_client.transports import _dispatch
from registry.definitions import definition_hash, remote_definition


def call_tool(
    spec: MCPServerSpec | Mapping[str, Any],
    tool_name: str,
    arguments: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    *,
    egress_check: EgressCheck | None = None,
    pinned_definition_hash: str = "",
    cancellation=None,
    listener=None,
) -> CallOutcome:
    """``tools/call``; a tool error comes back as ``CallOutcome(is_error=True)``, not an exception.

    Raises ``MCPConfigError``, ``MCPEgressDenied``, ``MCPConnectionError``,
    ``MCPTimeout`` or ``MCPToolError`` (a JSON-RPC error from the server).

    With ``pinned_definition_hash``, the session lists the server's tools first (every
    call: a server may change a definition between two calls of one session) and the
    call is not sent when the tool's definition there has another hash
    (``MCPDefinitionChanged``). Cancelling ``cancellation`` (``executors.base.Cancellation``)
    abandons the call: the server is sent ``notifications/cancelled``. ``listener``
    (``executors.base.Listener``) hears the server's ``notifications/progress`` for the call
    (a progress token is sent with it), on the client's loop. When its caller wants logs
    (``listener.wants["log_level"]``), the call has a session of its own, which asks the
    server for them (``logging/setLevel``, or per request at 2026-07-28) and hands each
    ``notifications/message`` to the listener: a pooled session is shared by other callers'
    calls, and a log message does not say which call it is about.
    """
    spec = _prepare(spec, egress_check)
    if not tool_name:
        raise MCPConfigError("no MCP tool name given")
    budget = float(timeout or spec.timeout_seconds)
    args = dict(arguments or {})
    log_level = _log_level(listener)

    async def op(client: Any) -> CallOutcome:
        if log_level:
            from mcp_types.version import MODERN_PROTOCOL_VERSIONS

            # 2026-07-28: per request (``own``). A server that does not log is not asked,
            # and one that refuses to is still called: logs are a courtesy to the caller.
            if (
                client.protocol_version not in MODERN_PROTOCOL_VERSIONS
                and client.server_capabilities.logging is not None
            ):
                from mcp.shared.exceptions import MCPError

                with contextlib.suppress(MCPError):
                    await client.set_logging_level(log_level)
        if pinned_definition_hash:
            _check_definition(await _all_tools(client, budget), tool_name, pinned_definition_hash)
        elif _fully_listed.get(id(client)) is not client:
            await _all_tools(client, budget)
        result = await client.call_tool(
            tool_name, args, read_timeout_seconds=budget, progress_callback=progress
        )
        if log_level:
            await _notifications_delivered()
        return _outcome_from_result(result)

    async def progress(value: float, total: float | None, message: str | None) -> None:
        if listener is not None:
            listener.progress(value, total, message)

    own: dict[str, Any] | None = None
    if log_level:

        async def on_log(params: Any) -> None:
            listener.log(params.level, params.data, params.logger)

        own = {"logging_callback": on_log, "log_level": log_level}

    runtime = _get_runtime()
    total = spec.timeout_seconds * 2 + budget * 2 + _SYNC_GRACE_SECONDS
    outcome, meta = runtime.run(
        _dispatch(runtime, spec, op, idempotent=False, own_session=own),
        timeout=total,
        cancellation=cancellation,
    )
    outcome.metadata.update(meta)
    return outcome


async def _notifications_delivered() -> None:
    """Let the client hand on the log messages that came before the result: the SDK
    queues notifications for a task of their own, which may not have run yet when the
    result is read, and the caller must hear them before the call is recorded as done."""
    for _ in range(20):
        await anyio.sleep(0)
    await anyio.sleep(0.02)


_LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def _log_level(listener: Any) -> str | None:
    """The level the listener's caller asked to hear logs from, if a known one."""
    level = listener.wants.get("log_level") if listener is not None else None
    return level if level in _LOG_LEVELS else None


def _check_definition(tools: list[Any], tool_name: str, pinned_hash: str) -> None:
    listed = next((tool for tool in tools if tool.name == tool_name), None)
    if listed is None:
        raise MCPDefinitionChanged(
            f"the MCP server no longer lists the tool '{tool_name}'", definition=None
        )
    definition = remote_definition(listed_tool(listed))
    if definition_hash(definition) != pinned_hash:
        raise MCPDefinitionChanged(
            f"the MCP server's definition of '{tool_name}' is not the approved one: the call "
            "was not sent, and the tool is quarantined until a platform admin approves it",
            definition=definition,
        )
