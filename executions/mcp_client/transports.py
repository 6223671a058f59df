"""Running one operation on a cached HTTP session or a stdio server started for it."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from executions.mcp_client.errors import (
    MCPClientError,
    MCPConfigError,
    MCPConnectionError,
    MCPTimeout,
)
from executions.mcp_client.limits import _STDERR_TAIL_BYTES, _T
from executions.mcp_client.runtime import _Runtime
from executions.mcp_client.sessions import _client_info, _enter_http_client, _StatusRecorder
from executions.mcp_client.spec import MCPServerSpec
from executions.mcp_client.translation import _describe, _is_transport_failure, _leaves, _translate

# --------------------------------------------------------------------------- operations


def _never_delivered(exc: BaseException, failure: BaseException | None) -> bool:
    """Whether a failed request certainly never reached the server (so resending is safe)."""
    import httpx2
    from mcp.shared.exceptions import MCPError

    if isinstance(exc, MCPError) and exc.message == "Session terminated":
        return True  # HTTP 404 for our session id: the server refused the request
    return failure is not None and any(
        isinstance(leaf, httpx2.ConnectError | httpx2.ConnectTimeout) for leaf in _leaves(failure)
    )


async def _with_http_session(
    runtime: _Runtime, spec: MCPServerSpec, op: Callable[[Any], Awaitable[_T]], *, idempotent: bool
) -> tuple[_T, dict[str, Any]]:
    """Run ``op(client)`` on a cached session; a stale cached session is replaced once.

    The request is resent on a fresh session only when it is idempotent or
    certainly never reached the server (connection refused, session unknown).
    """
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    for attempt in (1, 2):
        session, reused = await runtime.acquire(spec)
        client = session.client
        if client is None:  # the connection died between acquire() and now
            await runtime.discard(session)
            continue
        try:
            result = await op(client)
        except (asyncio.CancelledError, MCPClientError):
            raise
        except Exception as exc:
            if isinstance(exc, MCPError):
                session_broken = (
                    exc.code == CONNECTION_CLOSED or exc.message == "Session terminated"
                )
            else:
                session_broken = _is_transport_failure(exc) or not session.alive
            if not session_broken:  # a timeout or an error answer: the session is fine
                raise _translate(exc, phase="request", status=session.status.status) from None
            await runtime.discard(session)  # waits for the owner task: ``failure`` is final
            if reused and attempt == 1 and (idempotent or _never_delivered(exc, session.failure)):
                continue
            failure = session.failure if session.failure is not None else exc
            raise _translate(failure, phase="request", status=session.status.status) from None
        session.last_used = time.monotonic()
        meta: dict[str, Any] = {"session_reused": reused}
        with contextlib.suppress(Exception):
            meta["protocol_version"] = client.protocol_version
        return result, meta
    raise MCPConnectionError("could not open a working MCP session")


async def _with_own_http_session(
    spec: MCPServerSpec, op: Callable[[Any], Awaitable[_T]], options: dict[str, Any]
) -> tuple[_T, dict[str, Any]]:
    """Open a session for this operation alone (the client built with ``options``: the
    call's own callbacks), run ``op(client)``, close it."""
    status = _StatusRecorder()
    phase = "connect"
    try:
        # One scope spans the whole session (anyio scopes must nest): its deadline bounds
        # the handshake and is lifted once the session is up.
        with anyio.CancelScope() as scope:
            scope.deadline = anyio.current_time() + spec.timeout_seconds
            async with contextlib.AsyncExitStack() as stack:
                client = await _enter_http_client(stack, spec, status, **options)
                scope.deadline = math.inf
                phase = "request"
                result = await op(client)
                meta = {"session_reused": False, "protocol_version": client.protocol_version}
        if scope.cancelled_caught:
            raise MCPTimeout("timed out opening the MCP session")
    except (asyncio.CancelledError, MCPClientError):
        raise
    except BaseException as exc:
        raise _translate(exc, phase=phase, status=status.status) from None
    return result, meta


async def _with_stdio_process(
    runtime: _Runtime,
    spec: MCPServerSpec,
    op: Callable[[Any], Awaitable[_T]],
    options: dict[str, Any] | None = None,
) -> tuple[_T, dict[str, Any]]:
    """Start the stdio server, run ``op(client)``, stop the server (always, even on errors).
    ``options``: the client's own (the call's callbacks)."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=spec.command or "", args=list(spec.args), env=dict(spec.env)
    )
    with tempfile.TemporaryFile() as errlog:
        phase = "connect"
        client = Client(
            stdio_client(params, errlog=errlog),
            cache=None,
            client_info=_client_info(),
            **(options or {}),
        )
        try:
            # One scope spans the whole session (anyio scopes must nest): its deadline
            # bounds the handshake and is lifted once the session is up.
            with anyio.CancelScope() as scope:
                scope.deadline = anyio.current_time() + spec.timeout_seconds
                runtime.counters["stdio_processes_started"] += 1
                async with client:
                    scope.deadline = math.inf
                    phase = "request"
                    result = await op(client)
                    meta = {"protocol_version": client.protocol_version, "session_reused": False}
            if scope.cancelled_caught:
                raise MCPTimeout("timed out starting the stdio MCP server")
        except (asyncio.CancelledError, MCPClientError):
            raise
        except BaseException as exc:
            leaves = _leaves(exc)
            spawn_error = next((e for e in leaves if isinstance(e, OSError)), None)
            if phase == "connect" and isinstance(spawn_error, FileNotFoundError | PermissionError):
                raise MCPConfigError(
                    f"cannot start the stdio MCP server: {_describe(spawn_error)}"
                ) from None
            error = _translate(exc, phase=phase)
            tail = _stderr_tail(errlog)
            if isinstance(error, MCPConnectionError) and tail:
                error = MCPConnectionError(f"{error}; server stderr: {tail}")
            raise error from None
        return result, meta


def _stderr_tail(errlog: Any) -> str:
    with contextlib.suppress(Exception):
        errlog.seek(0, os.SEEK_END)
        size = errlog.tell()
        errlog.seek(max(0, size - _STDERR_TAIL_BYTES))
        return errlog.read().decode("utf-8", "replace").strip()
    return ""


async def _dispatch(
    runtime: _Runtime,
    spec: MCPServerSpec,
    op: Callable[[Any], Awaitable[_T]],
    *,
    idempotent: bool,
    own_session: dict[str, Any] | None = None,
) -> tuple[_T, dict[str, Any]]:
    """``op(client)`` on a pooled HTTP session, or with ``own_session`` (the client's
    options: callbacks of one call) on a session of its own; a stdio server is started
    for each operation."""
    if spec.transport == "stdio":
        return await _with_stdio_process(runtime, spec, op, own_session)
    if own_session is not None:
        return await _with_own_http_session(spec, op, own_session)
    return await _with_http_session(runtime, spec, op, idempotent=idempotent)
