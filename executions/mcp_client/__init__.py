"""A small synchronous client layer over the ``mcp`` SDK (v2).

ToolHub talks to MCP servers from synchronous code (Celery workers, Django
views), while the SDK is async. Every coroutine here runs on one background
event loop thread owned by this module (one per process, re-created after a
fork), which lets HTTP sessions outlive a single call:

* HTTP transports (streamable HTTP, legacy SSE) keep a small LRU cache of open
  client sessions keyed by (transport, url, token digest). Each cached session
  is owned by a dedicated task that entered the SDK's context managers and
  exits them on close, as anyio requires. A session that died is dropped and
  re-opened; on handshake-era protocols one idle for a while is pinged first.
* stdio servers are started per call and stopped when the call ends (the SDK
  closes stdin, then terminates the process group); no process outlives a call.

Public API: ``MCPServerSpec``, ``list_tools``, ``call_tool``, ``CallOutcome``,
``content_to_json``, ``stats``, ``shutdown`` and the ``MCPClientError`` family.

The package, one concept a module: ``limits``, ``errors``, ``spec``, ``content``
(results as JSON), ``checks`` (egress and stdio command checks), ``translation``
(SDK errors to ours), ``sessions`` (one cached HTTP session), ``runtime`` (the loop
thread and the session cache), ``transports`` (an operation on HTTP or stdio),
``listing`` (tools/list) and ``calls`` (tools/call).
"""

from __future__ import annotations

from executions.mcp_client.calls import call_tool
from executions.mcp_client.checks import (
    allowed_stdio_commands,
    check_stdio_command,
    check_stdio_env,
)
from executions.mcp_client.content import CallOutcome, content_to_json
from executions.mcp_client.errors import (
    MCPClientError,
    MCPConfigError,
    MCPConnectionError,
    MCPDefinitionChanged,
    MCPEgressDenied,
    MCPTimeout,
    MCPToolError,
)
from executions.mcp_client.limits import (
    DEFAULT_TIMEOUT_SECONDS,
    HTTP_TRANSPORTS,
    TRANSPORTS,
)
from executions.mcp_client.listing import list_tools
from executions.mcp_client.runtime import shutdown, stats
from executions.mcp_client.spec import ENV_SECRET_MIN_CHARS, MCPServerSpec, spec_secrets
from executions.mcp_client.translation import _translate

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "ENV_SECRET_MIN_CHARS",
    "HTTP_TRANSPORTS",
    "TRANSPORTS",
    "CallOutcome",
    "MCPClientError",
    "MCPConfigError",
    "MCPConnectionError",
    "MCPDefinitionChanged",
    "MCPEgressDenied",
    "MCPServerSpec",
    "MCPTimeout",
    "MCPToolError",
    "_translate",
    "allowed_stdio_commands",
    "call_tool",
    "check_stdio_command",
    "check_stdio_env",
    "content_to_json",
    "list_tools",
    "shutdown",
    "spec_secrets",
    "stats",
]
