"""The event loop thread of this process and its cache of open sessions."""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Coroutine
from typing import Any

import anyio

from executions.mcp_client.errors import MCPClientError, MCPConnectionError, MCPTimeout
from executions.mcp_client.limits import (
    _SYNC_GRACE_SECONDS,
    _T,
    MAX_CACHED_SESSIONS,
    PING_TIMEOUT_SECONDS,
)
from executions.mcp_client.sessions import _PooledSession, _token_digest
from executions.mcp_client.spec import MCPServerSpec

# A cached session idle for longer than this is pinged before it is reused.
PING_AFTER_IDLE_SECONDS = 10.0


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

    def run(self, coro: Coroutine[Any, Any, _T], timeout: float, cancellation=None) -> _T:
        """``coro`` on the client's loop; cancelling ``cancellation`` cancels it there (the
        SDK then sends the server ``notifications/cancelled`` for a request under way)."""
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("mcp_client's synchronous API cannot be used from its own loop")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        forget = cancellation.on_cancel(future.cancel) if cancellation is not None else None
        try:
            return future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise MCPTimeout("the MCP operation did not complete in time") from None
        except concurrent.futures.CancelledError:
            raise MCPConnectionError(
                "the MCP operation was cancelled (the call, or the client shutting down)"
            ) from None
        finally:
            if forget is not None:
                forget()

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
