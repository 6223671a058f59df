"""The process-wide pinned connection pool and the headers every request carries."""

from __future__ import annotations

import base64
import logging
import os
import threading

import httpx

from executions.executors.http.pool import PinnedTransport
from executions.executors.http.values import USER_AGENT
from toolhub import tracing


class _NoRequestLines(logging.Filter):
    """httpx logs every request URL at INFO; URLs may carry secrets (query, path), so drop those lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("HTTP Request:")


logging.getLogger("httpx").addFilter(_NoRequestLines())

# Sent with every request unless the tool's own headers name them. There is
# no cookie jar anywhere: a cookie one upstream sets never rides along a call.
_DEFAULT_HEADERS = (
    ("Accept", "*/*"),
    ("Accept-Encoding", "gzip, deflate"),
    ("Connection", "keep-alive"),
    ("User-Agent", USER_AGENT),
)

_transport: PinnedTransport | None = None
_transport_pid: int | None = None
_transport_lock = threading.Lock()


def get_transport() -> PinnedTransport:
    """The process-wide connection pool (created lazily; recreated after a fork)."""
    global _transport, _transport_pid
    transport, pid = _transport, os.getpid()
    if transport is not None and _transport_pid == pid:
        return transport
    with _transport_lock:
        if _transport is None or _transport_pid != pid:
            # After a fork the parent's pool is abandoned, not closed: its
            # sockets belong to the parent.
            _transport = PinnedTransport()
            _transport_pid = pid
        return _transport


_traced: tuple[PinnedTransport, httpx.BaseTransport] | None = None


def sending_transport() -> httpx.BaseTransport:
    """The pool, behind the httpx instrumentation's transport while traces are on (a
    client span per request, ``traceparent`` in its headers); the pool itself when off."""
    global _traced
    transport = get_transport()
    if not tracing.enabled():
        return transport
    traced = _traced
    if traced is None or traced[0] is not transport:
        traced = _traced = (transport, tracing.traced_http_transport(transport))
    return traced[1]


def close_transport() -> None:
    """Close the shared pool (tests, shutdown); the next call creates a new one."""
    global _transport, _transport_pid
    with _transport_lock:
        if _transport is not None and _transport_pid == os.getpid():
            _transport.close()
        _transport, _transport_pid = None, None


def _with_url_credentials(url: httpx.URL, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Credentials written in the URL (``user:pass@host``) are sent as basic auth."""
    if not (url.username or url.password):
        return headers
    token = base64.b64encode(f"{url.username}:{url.password}".encode()).decode("ascii")
    kept = [(n, v) for n, v in headers if n.lower() != "authorization"]
    return [*kept, ("Authorization", f"Basic {token}")]


def _with_defaults(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    named = {name.lower() for name, _ in headers}
    return [(n, v) for n, v in _DEFAULT_HEADERS if n.lower() not in named] + headers
