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
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import binascii
import concurrent.futures
import contextlib
import hashlib
import json
import logging
import math
import os
import re
import tempfile
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anyio

logger = logging.getLogger(__name__)

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
# A cached session idle for longer than this is pinged before it is reused.
PING_AFTER_IDLE_SECONDS = 10.0
PING_TIMEOUT_SECONDS = 5.0
# Extra time the synchronous wrappers wait on top of the connect and call budgets.
_SYNC_GRACE_SECONDS = 10.0
# Binary content (images, audio, blobs) larger than this is summarised, not inlined.
DEFAULT_MAX_INLINE_BINARY_BYTES = 256 * 1024
_MAX_LIST_PAGES = 100
_STDERR_TAIL_BYTES = 2000
_SSE_READ_TIMEOUT_SECONDS = 300.0

EgressCheck = Callable[[str], Any]
_T = TypeVar("_T")


# --------------------------------------------------------------------------- errors


class MCPClientError(Exception):
    """Base class of the errors this module raises."""


class MCPConfigError(MCPClientError):
    """The server configuration is unusable (bad transport, URL, command not allowlisted…)."""


class MCPEgressDenied(MCPClientError):
    """The egress check refused the server's URL."""


class MCPConnectionError(MCPClientError):
    """Could not connect, the connection dropped, or the server process died.

    ``status`` carries the HTTP status when the server refused the connection
    with one (401/403 for a rejected token).
    """

    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message)
        self.status = status


class MCPTimeout(MCPClientError):
    """The connection or the request did not complete in time."""


class MCPToolError(MCPClientError):
    """The server answered the request with a protocol (JSON-RPC) error."""

    def __init__(self, message: str, *, code: int | None = None):
        super().__init__(message)
        self.code = code


# --------------------------------------------------------------------------- spec


@dataclass
class MCPServerSpec:
    """How to reach one MCP server."""

    name: str = ""
    transport: str = "streamable_http"
    url: str | None = None
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict, repr=False)
    auth_token: str | None = field(default=None, repr=False)
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any]) -> MCPServerSpec:
        """Build a spec from a plain mapping (model fields, tool configs); raises ``MCPConfigError``."""
        if isinstance(d, MCPServerSpec):
            return d
        if not isinstance(d, Mapping):
            raise MCPConfigError("the MCP server configuration must be a mapping")
        transport = _TRANSPORT_ALIASES.get(str(d.get("transport") or "streamable_http").lower())
        if transport is None:
            raise MCPConfigError(
                f"unknown MCP transport {d.get('transport')!r}; expected one of {', '.join(TRANSPORTS)}"
            )
        args = d.get("args") or []
        if not isinstance(args, list | tuple) or not all(isinstance(a, str) for a in args):
            raise MCPConfigError("MCP server 'args' must be a list of strings")
        env = d.get("env") or {}
        if not isinstance(env, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            raise MCPConfigError("MCP server 'env' must map strings to strings")
        timeout = d.get("timeout_seconds")
        try:
            timeout = DEFAULT_TIMEOUT_SECONDS if timeout in (None, "") else float(timeout)
        except (TypeError, ValueError):
            raise MCPConfigError("MCP server 'timeout_seconds' must be a number") from None
        token = d.get("auth_token")
        spec = cls(
            name=str(d.get("name") or ""),
            transport=transport,
            url=(str(d["url"]) if d.get("url") else None),
            command=(str(d["command"]) if d.get("command") else None),
            args=list(args),
            env=dict(env),
            auth_token=(str(token) if token else None),
            timeout_seconds=timeout,
        )
        spec.validate()
        return spec

    def validate(self) -> None:
        if self.transport not in TRANSPORTS:
            raise MCPConfigError(
                f"unknown MCP transport {self.transport!r}; expected one of {', '.join(TRANSPORTS)}"
            )
        if not self.timeout_seconds or self.timeout_seconds <= 0:
            raise MCPConfigError("MCP server 'timeout_seconds' must be positive")
        if self.transport in HTTP_TRANSPORTS:
            if not self.url:
                raise MCPConfigError(f"the {self.transport} transport needs a 'url'")
            parts = urlsplit(self.url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise MCPConfigError("the MCP server 'url' must be an absolute http(s) URL")
            if parts.username or parts.password:
                raise MCPConfigError(
                    "the MCP server 'url' must not embed credentials; use 'auth_token'"
                )
        elif not self.command:
            raise MCPConfigError("the stdio transport needs a 'command'")

    @property
    def secrets(self) -> tuple[str, ...]:
        """Values that must never appear in an output or an error message."""
        return (self.auth_token,) if self.auth_token else ()


# --------------------------------------------------------------------------- results


@dataclass
class CallOutcome:
    """A ``tools/call`` result mapped to plain JSON."""

    is_error: bool
    content: list[dict[str, Any]]
    structured: Any = None
    text: str = ""
    error_message: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def as_output(self) -> dict[str, Any]:
        return {"content": self.content, "structured": self.structured, "text": self.text}


# Environment values this long or longer are kept out of outputs and errors; shorter
# ones ("1", "true", "debug") are settings, and redacting them would mangle text.
ENV_SECRET_MIN_CHARS = 8


def spec_secrets(spec: Any) -> list[str]:
    """The secrets of a server mapping (``mcp_server_spec``): its bearer token and the
    values of its stdio environment (which is stored write-only), for redaction."""
    if not isinstance(spec, Mapping):
        return []
    secrets = [str(spec["auth_token"])] if spec.get("auth_token") else []
    env = spec.get("env")
    if isinstance(env, Mapping):
        secrets += [
            v for v in env.values() if isinstance(v, str) and len(v) >= ENV_SECRET_MIN_CHARS
        ]
    return secrets


def _binary_entry(kind: str, mime_type: str | None, data: str, max_inline: int) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": kind, "mime_type": mime_type}
    if len(data) <= max_inline:
        entry["data"] = data
        return entry
    try:
        size = len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        size = None
    entry["data_omitted"] = True
    entry["size_bytes"] = size
    return entry


def _text_entry(text: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "text", "text": text}
    stripped = text.strip()
    if stripped and stripped[0] in '{["-0123456789tfn':
        with contextlib.suppress(ValueError, RecursionError):
            entry["json"] = json.loads(stripped)
    return entry


def content_to_json(
    block: Any, *, max_inline_binary_bytes: int = DEFAULT_MAX_INLINE_BINARY_BYTES
) -> dict[str, Any]:
    """Map one MCP content block (SDK model or dict) to a JSON-safe dict."""
    if hasattr(block, "model_dump"):
        data = block.model_dump(mode="json", by_alias=False, exclude_none=True)
    elif isinstance(block, Mapping):
        data = dict(block)
    else:
        return {"type": "unknown", "value": str(block)}
    kind = data.get("type")
    if kind == "text":
        return _text_entry(str(data.get("text", "")))
    if kind in ("image", "audio"):
        mime = data.get("mime_type") or data.get("mimeType")
        return _binary_entry(kind, mime, str(data.get("data", "")), max_inline_binary_bytes)
    if kind == "resource":
        resource = data.get("resource") or {}
        entry: dict[str, Any] = {
            "type": "resource",
            "uri": str(resource.get("uri", "")),
            "mime_type": resource.get("mime_type") or resource.get("mimeType"),
        }
        if "text" in resource:
            entry.update(_text_entry(str(resource["text"])), type="resource")
        elif "blob" in resource:
            blob = _binary_entry(
                "resource", entry["mime_type"], str(resource["blob"]), max_inline_binary_bytes
            )
            if "data" in blob:
                entry["blob"] = blob["data"]
            else:
                entry.update(data_omitted=True, size_bytes=blob["size_bytes"])
        return entry
    if kind == "resource_link":
        return {
            "type": "resource_link",
            "uri": str(data.get("uri", "")),
            "name": data.get("name"),
            "mime_type": data.get("mime_type") or data.get("mimeType"),
            "description": data.get("description"),
        }
    data.pop("meta", None)
    data.pop("annotations", None)
    return data


def _outcome_from_result(result: Any, max_inline: int) -> CallOutcome:
    content = [content_to_json(b, max_inline_binary_bytes=max_inline) for b in result.content or []]
    texts = [c["text"] for c in content if c.get("type") == "text" and "text" in c]
    text = "\n".join(texts)
    is_error = bool(result.is_error)
    message = None
    if is_error:
        message = text or "the MCP tool reported an error"
    return CallOutcome(
        is_error=is_error,
        content=content,
        structured=result.structured_content,
        text=text,
        error_message=message,
    )


# --------------------------------------------------------------------------- checks


def _default_egress_check(url: str) -> Any:
    """Run ``executions.egress.check_url`` when that module exists; allow otherwise."""
    try:
        from executions.egress import check_url
    except ImportError:
        return None
    return check_url(url)


def _run_egress_check(url: str, egress_check: EgressCheck | None) -> None:
    """Refuse the URL unless the egress check passes (it raises, or returns False, to refuse).

    A host that cannot be resolved is a connection problem, not a refusal.
    """
    check = _default_egress_check if egress_check is None else egress_check
    try:
        verdict = check(url)
    except MCPClientError:
        raise
    except Exception as exc:
        if type(exc).__name__ == "HostResolutionError" or isinstance(exc, OSError):
            raise MCPConnectionError(f"cannot reach the MCP server: {exc}") from exc
        raise MCPEgressDenied(f"egress to the MCP server is not allowed: {exc}") from exc
    if verdict is False:
        raise MCPEgressDenied("egress to the MCP server is not allowed")


def allowed_stdio_commands() -> list[str]:
    try:
        from django.conf import settings

        if not settings.configured:
            return []
    except ImportError:
        return []
    from registry.models.mcp import allowed_stdio_commands as allowed

    return allowed()


def check_stdio_command(command: str, args: list[str] | tuple[str, ...] = ()) -> None:
    """Raise ``MCPConfigError`` unless ``command`` (with ``args``) is on
    ``TOOLHUB_MCP_STDIO_COMMANDS`` (``registry.models.mcp.stdio_command_problem``,
    checked when a server is saved, and here again: the list may have narrowed)."""
    from registry.models.mcp import stdio_command_problem

    problem = stdio_command_problem(command, args, allowed=allowed_stdio_commands())
    if problem:
        raise MCPConfigError(problem)


def check_stdio_env(env: Mapping[str, str]) -> None:
    """Raise ``MCPConfigError`` for variables the environment may not set
    (``registry.models.mcp.refused_env_names``), also for servers saved before the rule."""
    from registry.models.mcp import refused_env_names

    refused = refused_env_names(env)
    if refused:
        raise MCPConfigError(
            f"the stdio server's environment may not set {', '.join(refused)} "
            "(see TOOLHUB_MCP_STDIO_ENV_VARS)"
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
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    leaves = _leaves(exc)
    for leaf in leaves:
        if isinstance(leaf, MCPClientError):
            return leaf
    leaf = leaves[0] if leaves else exc
    response = getattr(leaf, "response", None)
    if response is not None and isinstance(getattr(response, "status_code", None), int):
        status = response.status_code  # httpx2.HTTPStatusError (the SSE transport's GET)
        if status in (401, 403):
            return MCPConnectionError(
                f"the MCP server refused the credentials (HTTP {status})", status=status
            )
        return MCPConnectionError(f"the MCP server answered HTTP {status} ({phase})", status=status)
    if isinstance(leaf, MCPError):
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
                return MCPConnectionError(
                    f"the MCP server refused the credentials (HTTP {status})", status=status
                )
            suffix = f" (HTTP {status})" if status else ""
            return MCPConnectionError(
                f"could not open an MCP session: {_server_message(leaf.message)}{suffix}",
                status=status,
            )
        return MCPToolError(
            f"the MCP server returned an error: {_server_message(leaf.message)}", code=leaf.code
        )
    if isinstance(leaf, TimeoutError):
        return MCPTimeout(f"the MCP server did not answer in time ({phase})")
    if phase == "request" and not _is_transport_failure(leaf):
        # e.g. structured content that contradicts the tool's output schema
        return MCPToolError(f"the MCP server sent an unusable result: {_describe(leaf)}")
    return MCPConnectionError(f"cannot reach the MCP server ({phase}): {_describe(leaf)}")


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


# --------------------------------------------------------------------------- runtime


def _client_info() -> Any:
    from mcp_types import Implementation

    return Implementation(name="toolhub", version="1")


def _token_digest(token: str | None) -> str:
    return hashlib.sha256(token.encode()).hexdigest() if token else ""


def _connection_closed(client: Any) -> bool:
    """Best effort: whether the SDK already saw this connection close.

    mcp 2.x has no public flag for it (an SSE stream that ended leaves the
    client "open" with a closed dispatcher), hence the defensive attribute walk;
    when the attributes move, this answers False and the idle ping or the
    retry on ``CONNECTION_CLOSED`` takes over.
    """
    try:
        dispatcher = client.session._dispatcher
    except Exception:
        return False
    return getattr(dispatcher, "_closed", False) is True


class _StatusRecorder:
    """Remembers the last HTTP error status seen, to explain a refused connection."""

    def __init__(self) -> None:
        self.status: int | None = None

    async def __call__(self, response: Any) -> None:
        if response.status_code >= 400:
            self.status = response.status_code


class _PooledSession:
    """One open HTTP client session, owned by a dedicated task."""

    def __init__(self, spec: MCPServerSpec, key: tuple[str, str, str]):
        self.spec = spec
        self.key = key
        self.client: Any = None
        self.status = _StatusRecorder()
        self.last_used = time.monotonic()
        self.failure: BaseException | None = None
        self._ready: asyncio.Future[Any] | None = None
        self._closing: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        return (
            self._task is not None
            and not self._task.done()
            and self.client is not None
            and not _connection_closed(self.client)
        )

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._closing = asyncio.Event()
        self._task = loop.create_task(self._own(), name=f"mcp-session {self.spec.name}")
        try:
            with anyio.fail_after(self.spec.timeout_seconds):
                error = await asyncio.shield(self._ready)
        except TimeoutError:
            await self.close()
            raise MCPTimeout("timed out opening the MCP session") from None
        except BaseException:
            await self.close()
            raise
        if error is not None:
            await self.close()
            raise _translate(error, phase="connect", status=self.status.status) from None

    async def _own(self) -> None:
        assert self._ready is not None and self._closing is not None
        try:
            async with AsyncExitStack() as stack:
                self.client = await _enter_http_client(stack, self.spec, self.status)
                self._ready.set_result(None)
                await self._closing.wait()
        except BaseException as exc:  # the owner task records how its session ended
            self.failure = exc
            if not self._ready.done():
                self._ready.set_result(exc)
            else:
                logger.debug("MCP session %s ended: %s", self.spec.name, _describe(exc))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self.client = None

    async def close(self) -> None:
        if self._closing is not None:
            self._closing.set()
        task = self._task
        if task is None or task.done():
            return
        with anyio.move_on_after(5):
            await asyncio.wait([task])
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


async def _enter_http_client(
    stack: AsyncExitStack, spec: MCPServerSpec, status: _StatusRecorder
) -> Any:
    """Open an ``mcp.Client`` over an HTTP transport; ``stack`` owns everything it opened."""
    import httpx2
    from mcp import Client

    headers = {"Authorization": f"Bearer {spec.auth_token}"} if spec.auth_token else {}
    connect = spec.timeout_seconds
    if spec.transport == "sse":
        from mcp.client.sse import sse_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        def factory(headers: Any = None, timeout: Any = None, auth: Any = None) -> Any:
            http = create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)
            http.event_hooks["response"].append(status)
            return http

        transport: Any = sse_client(
            spec.url or "",
            headers=headers or None,
            timeout=connect,
            sse_read_timeout=_SSE_READ_TIMEOUT_SECONDS,
            httpx_client_factory=factory,
        )
    else:
        from mcp.client.streamable_http import streamable_http_client

        http = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers=headers,
                timeout=httpx2.Timeout(connect, read=_SSE_READ_TIMEOUT_SECONDS),
                event_hooks={"response": [status]},
            )
        )
        transport = streamable_http_client(spec.url or "", http_client=http)
    client = Client(transport, cache=None, client_info=_client_info())
    return await stack.enter_async_context(client)


class _Runtime:
    """The event loop thread and the session cache of this process."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self.sessions: OrderedDict[tuple[str, str, str], _PooledSession] = OrderedDict()
        # Sessions being opened: the future resolves to None, or to the error it failed with.
        self.opening: dict[tuple[str, str, str], asyncio.Future[BaseException | None]] = {}
        self.counters = {
            "sessions_opened": 0,
            "sessions_reused": 0,
            "sessions_discarded": 0,
            "stdio_processes_started": 0,
        }
        started = threading.Event()
        self.thread = threading.Thread(
            target=self._run, args=(started,), name="toolhub-mcp-loop", daemon=True
        )
        self.thread.start()
        started.wait()

    def _run(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(started.set)
        try:
            self.loop.run_forever()
        finally:
            with contextlib.suppress(Exception):
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    def run(self, coro: Coroutine[Any, Any, _T], timeout: float) -> _T:
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("mcp_client's synchronous API cannot be used from its own loop")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise MCPTimeout("the MCP operation did not complete in time") from None
        except concurrent.futures.CancelledError:
            raise MCPConnectionError(
                "the MCP operation was cancelled (client shutting down)"
            ) from None

    # -- session cache (only touched from the loop thread) --

    async def acquire(self, spec: MCPServerSpec) -> tuple[_PooledSession, bool]:
        """A live session for ``spec`` and whether it was reused from the cache."""
        key = (spec.transport, spec.url or "", _token_digest(spec.auth_token))
        session = self.sessions.get(key)
        if session is not None:
            if session.alive and await self._healthy(session):
                self.sessions.move_to_end(key)
                self.counters["sessions_reused"] += 1
                return session, True
            await self.discard(session)
        pending = self.opening.get(key)
        if pending is not None:
            # Another call is opening this very session: share its outcome.
            error = await asyncio.shield(pending)
            if error is not None:
                raise error
            session = self.sessions.get(key)
            if session is not None:
                return session, True
        future: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
        self.opening[key] = future
        try:
            session = _PooledSession(spec, key)
            await session.open()
        except MCPClientError as exc:
            future.set_result(exc)
            raise
        except BaseException:
            future.set_result(MCPConnectionError("could not open an MCP session"))
            raise
        finally:
            self.opening.pop(key, None)
        self.counters["sessions_opened"] += 1
        self.sessions[key] = session
        future.set_result(None)
        while len(self.sessions) > MAX_CACHED_SESSIONS:
            _, oldest = self.sessions.popitem(last=False)
            await oldest.close()
        return session, False

    async def _healthy(self, session: _PooledSession) -> bool:
        """Whether a cached session can be reused.

        A session idle for a while is pinged first, on handshake-era protocol
        versions only: 2026-07-28 removed ``ping`` (and its streamable HTTP is
        per-request anyway); there ``alive`` (owner task running, connection
        not closed) is the check.
        """
        if time.monotonic() - session.last_used < PING_AFTER_IDLE_SECONDS:
            return True
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        client = session.client
        try:
            modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
        except Exception:
            return False
        if not modern:
            try:
                with anyio.fail_after(PING_TIMEOUT_SECONDS):
                    await client.session.send_ping()
            except Exception:
                return False
        session.last_used = time.monotonic()
        return True

    async def discard(self, session: _PooledSession) -> None:
        if self.sessions.get(session.key) is session:
            del self.sessions[session.key]
            self.counters["sessions_discarded"] += 1
        await session.close()

    async def close_all(self) -> None:
        """Close the cached sessions, then cancel what still runs (stdio calls stop their server)."""
        sessions = list(self.sessions.values())
        self.sessions.clear()
        for session in sessions:
            with contextlib.suppress(Exception):
                await session.close()
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        if others:
            await asyncio.wait(others, timeout=_SYNC_GRACE_SECONDS)

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        if self.thread.is_alive():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self.close_all(), self.loop).result(timeout=15)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=15)


_runtime: _Runtime | None = None
_runtime_lock = threading.Lock()


def _get_runtime() -> _Runtime:
    global _runtime
    with _runtime_lock:
        if _runtime is None or _runtime.pid != os.getpid() or not _runtime.thread.is_alive():
            # After a fork the parent's loop thread does not exist here: start afresh.
            _runtime = _Runtime()
        return _runtime


def shutdown() -> None:
    """Close every cached session and stop the loop thread (safe to call twice)."""
    global _runtime
    with _runtime_lock:
        runtime, _runtime = _runtime, None
    if runtime is not None and runtime.pid == os.getpid():
        runtime.stop()


atexit.register(shutdown)


def stats() -> dict[str, int]:
    """Counters of this process's runtime (sessions opened/reused/open, stdio processes)."""
    runtime = _runtime
    if runtime is None or runtime.pid != os.getpid():
        return {
            "sessions_opened": 0,
            "sessions_reused": 0,
            "sessions_discarded": 0,
            "sessions_open": 0,
            "stdio_processes_started": 0,
        }
    return {**runtime.counters, "sessions_open": len(runtime.sessions)}


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


async def _with_stdio_process(
    runtime: _Runtime, spec: MCPServerSpec, op: Callable[[Any], Awaitable[_T]]
) -> tuple[_T, dict[str, Any]]:
    """Start the stdio server, run ``op(client)``, stop the server (always, even on errors)."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=spec.command or "", args=list(spec.args), env=dict(spec.env)
    )
    with tempfile.TemporaryFile() as errlog:
        phase = "connect"
        client = Client(stdio_client(params, errlog=errlog), cache=None, client_info=_client_info())
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
    runtime: _Runtime, spec: MCPServerSpec, op: Callable[[Any], Awaitable[_T]], *, idempotent: bool
) -> tuple[_T, dict[str, Any]]:
    if spec.transport == "stdio":
        return await _with_stdio_process(runtime, spec, op)
    return await _with_http_session(runtime, spec, op, idempotent=idempotent)


def _prepare(
    spec: MCPServerSpec | Mapping[str, Any], egress_check: EgressCheck | None
) -> MCPServerSpec:
    spec = MCPServerSpec.from_mapping(spec) if not isinstance(spec, MCPServerSpec) else spec
    spec.validate()
    if spec.transport == "stdio":
        check_stdio_command(spec.command or "", spec.args)
        check_stdio_env(spec.env)
    else:
        _run_egress_check(spec.url or "", egress_check)
    return spec


# Sessions that have listed every page of their server's tools. The SDK checks a
# result's structured content against the tool's output schema only when the
# session knows that schema, and on its own it re-reads only the first page of a
# paginated listing: a tool on a later page went unchecked on a fresh session.
# By id: the SDK's Client is not hashable; the identity check covers a reused id.
_fully_listed: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


async def _all_tools(client: Any, budget: float) -> list[Any]:
    """Every page of ``tools/list`` (the session keeps each tool's output schema)."""
    tools: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(_MAX_LIST_PAGES):
        with anyio.fail_after(budget):
            page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor or cursor in seen:
            break
        seen.add(cursor)
    _fully_listed[id(client)] = client
    return tools


def list_tools(
    spec: MCPServerSpec | Mapping[str, Any],
    *,
    timeout: float | None = None,
    egress_check: EgressCheck | None = None,
) -> list[dict[str, Any]]:
    """``tools/list`` (all pages) as ``[{"name", "description", "input_schema"}, …]``."""
    spec = _prepare(spec, egress_check)
    budget = float(timeout or spec.timeout_seconds)

    async def op(client: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": tool.name,
                "description": tool.description or "",
                "input_schema": tool.input_schema or {"type": "object"},
            }
            for tool in await _all_tools(client, budget)
        ]

    runtime = _get_runtime()
    total = spec.timeout_seconds + budget * 2 + _SYNC_GRACE_SECONDS
    tools, _ = runtime.run(_dispatch(runtime, spec, op, idempotent=True), timeout=total)
    return tools


def call_tool(
    spec: MCPServerSpec | Mapping[str, Any],
    tool_name: str,
    arguments: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    *,
    egress_check: EgressCheck | None = None,
    max_inline_binary_bytes: int = DEFAULT_MAX_INLINE_BINARY_BYTES,
) -> CallOutcome:
    """``tools/call``; a tool error comes back as ``CallOutcome(is_error=True)``, not an exception.

    Raises ``MCPConfigError``, ``MCPEgressDenied``, ``MCPConnectionError``,
    ``MCPTimeout`` or ``MCPToolError`` (a JSON-RPC error from the server).
    """
    spec = _prepare(spec, egress_check)
    if not tool_name:
        raise MCPConfigError("no MCP tool name given")
    budget = float(timeout or spec.timeout_seconds)
    args = dict(arguments or {})

    async def op(client: Any) -> CallOutcome:
        if _fully_listed.get(id(client)) is not client:
            await _all_tools(client, budget)
        result = await client.call_tool(tool_name, args, read_timeout_seconds=budget)
        return _outcome_from_result(result, max_inline_binary_bytes)

    runtime = _get_runtime()
    total = spec.timeout_seconds * 2 + budget * 2 + _SYNC_GRACE_SECONDS
    outcome, meta = runtime.run(_dispatch(runtime, spec, op, idempotent=False), timeout=total)
    outcome.metadata.update(meta)
    return outcome
