"""SDK and transport exceptions mapped to the MCP client's errors."""

from __future__ import annotations

import re
from typing import Any

import anyio

from executions.mcp_client.errors import (
    MCPClientError,
    MCPConnectionError,
    MCPTimeout,
    MCPToolError,
)

# --------------------------------------------------------------------------- error mapping


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        found: list[BaseException] = []
        for inner in exc.exceptions:
            found.extend(_leaves(inner))
        return found
    return [exc]


def _describe(exc: BaseException) -> str:
    """``Type: first line of the message`` (bounded)."""
    text = _server_message(str(exc)) if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _server_message(text: str) -> str:
    """An MCP error's message as a person should read it: the first line, bounded; a
    parser's report about an answer that is not JSON-RPC becomes one plain sentence."""
    first = str(text or "").strip().split("\n", 1)[0]
    if "validation error" in first.lower() and ("jsonrpc" in first.lower() or "for " in first):
        return "the answer is not an MCP (JSON-RPC) message"
    return first[:300] or "no message"


# What the SDK itself says with the codes a server may also use (mcp.shared and
# mcp.client.streamable_http): its own timeouts and lost or abandoned streams.
_SDK_TIMEOUT = re.compile(r"Request '.*' timed out$|Timed out after ")
_SDK_CLOSED = re.compile(
    r"Connection closed$|SSE stream (failed|ended)|server answered a request with 202 Accepted$"
)


def _translate(exc: BaseException, *, phase: str, status: int | None = None) -> MCPClientError:
    """Map an SDK / transport exception to one of this module's errors."""
    from mcp.shared.exceptions import MCPError

    leaves = _leaves(exc)
    for leaf in leaves:
        if isinstance(leaf, MCPClientError):
            return leaf
    leaf = leaves[0] if leaves else exc
    response = getattr(leaf, "response", None)
    if response is not None and isinstance(getattr(response, "status_code", None), int):
        # httpx2.HTTPStatusError (the SSE transport's GET)
        return _http_status_error(response.status_code, phase)
    if isinstance(leaf, MCPError):
        return _from_mcp_error(leaf, phase, status)
    if isinstance(leaf, TimeoutError):
        return MCPTimeout(f"the MCP server did not answer in time ({phase})")
    if phase == "request" and not _is_transport_failure(leaf):
        # e.g. structured content that contradicts the tool's output schema
        return MCPToolError(f"the MCP server sent an unusable result: {_describe(leaf)}")
    return MCPConnectionError(f"cannot reach the MCP server ({phase}): {_describe(leaf)}")


def _http_status_error(status: int, phase: str) -> MCPConnectionError:
    if status in (401, 403):
        return MCPConnectionError(
            f"the MCP server refused the credentials (HTTP {status})", status=status
        )
    return MCPConnectionError(f"the MCP server answered HTTP {status} ({phase})", status=status)


def _from_mcp_error(leaf: Any, phase: str, status: int | None) -> MCPClientError:
    """A JSON-RPC error: the SDK's own timeout or closed stream, or the server's answer."""
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    # The SDK raises these two codes itself, with these messages; a server may
    # answer with the same codes (-32000 and -32001 are in JSON-RPC's range for
    # servers' own errors), and then it is the server's error, with its message.
    message = str(leaf.message or "")
    if leaf.code == REQUEST_TIMEOUT and _SDK_TIMEOUT.match(message):
        return MCPTimeout(f"the MCP server did not answer in time ({phase})")
    if leaf.code == CONNECTION_CLOSED and _SDK_CLOSED.match(message):
        return MCPConnectionError(
            f"the connection to the MCP server closed ({phase}): {_server_message(message)}"
            if message != "Connection closed"
            else f"the connection to the MCP server closed ({phase})"
        )
    if leaf.message == "Session terminated":  # HTTP 404 for a session the server forgot
        return MCPConnectionError(f"the MCP server no longer knows this session ({phase})")
    if phase == "connect":
        if status in (401, 403):
            return _http_status_error(status, phase)
        suffix = f" (HTTP {status})" if status else ""
        return MCPConnectionError(
            f"could not open an MCP session: {_server_message(leaf.message)}{suffix}",
            status=status,
        )
    return MCPToolError(
        f"the MCP server returned an error: {_server_message(leaf.message)}", code=leaf.code
    )


def _is_transport_failure(exc: BaseException) -> bool:
    """Whether ``exc`` comes from the connection (network, pipes, closed streams)."""
    import httpx2

    kinds = (
        httpx2.TransportError,
        httpx2.HTTPStatusError,
        OSError,
        anyio.BrokenResourceError,
        anyio.ClosedResourceError,
        anyio.EndOfStream,
    )
    return any(isinstance(leaf, kinds) for leaf in _leaves(exc))
