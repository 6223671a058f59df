"""The MCP client's transports, timeouts and size limits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

TRANSPORTS = ("streamable_http", "sse", "stdio")
HTTP_TRANSPORTS = ("streamable_http", "sse")
_TRANSPORT_ALIASES = {
    "streamable_http": "streamable_http",
    "streamable-http": "streamable_http",
    "streamablehttp": "streamable_http",
    "http": "streamable_http",
    "sse": "sse",
    "stdio": "stdio",
}

DEFAULT_TIMEOUT_SECONDS = 30.0
MAX_CACHED_SESSIONS = 16
PING_TIMEOUT_SECONDS = 5.0
# Extra time the synchronous wrappers wait on top of the connect and call budgets.
_SYNC_GRACE_SECONDS = 10.0
_MAX_LIST_PAGES = 100
_STDERR_TAIL_BYTES = 2000
_SSE_READ_TIMEOUT_SECONDS = 300.0

EgressCheck = Callable[[str], Any]
_T = TypeVar("_T")
