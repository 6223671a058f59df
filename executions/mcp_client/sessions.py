"""One cached HTTP session, owned by the task that opened it."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from contextlib import AsyncExitStack
from typing import Any

import anyio

from executions.mcp_client.errors import MCPTimeout
from executions.mcp_client.limits import _SSE_READ_TIMEOUT_SECONDS
from executions.mcp_client.spec import MCPServerSpec
from executions.mcp_client.translation import _describe, _translate

# --------------------------------------------------------------------------- runtime

# The package's logger, as when the client was one module.
logger = logging.getLogger("executions.mcp_client")


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
    stack: AsyncExitStack, spec: MCPServerSpec, status: _StatusRecorder, **options: Any
) -> Any:
    """Open an ``mcp.Client`` over an HTTP transport; ``stack`` owns everything it opened.
    ``options``: the client's own (callbacks of the one call a session is opened for)."""
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
    client = Client(transport, cache=None, client_info=_client_info(), **options)
    return await stack.enter_async_context(client)
