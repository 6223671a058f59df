"""Listen streams (the 2025 GET stream, 2026-07-28 ``subscriptions/listen``): how many,
and what they watch.

**How many.** ``TOOLHUB_MCP_LISTEN_STREAMS_PER_TOKEN`` for one token on all web
processes together, ``TOOLHUB_MCP_LISTEN_STREAMS_PER_PROCESS`` in one process; past
either the gate answers 429 naming the setting. A token's streams are leases in
Redis: a sorted set of lease ids scored by their expiry on Redis's own clock. An open
stream's lease is renewed while it lives and dropped when it ends; a process that
dies without dropping its leases leaves ones that expire within
``TOOLHUB_MCP_LISTEN_LEASE_SECONDS``, so no count outlives its stream for long.
Without Redis (embedded: one process) the leases are held in memory.

**What they watch.** One ``Watcher`` per process (the gate's lifespan runs it) reads
the tool list of each caller with an open stream every ``LIST_POLL_SECONDS``: once
per (caller, toolset), however many streams that caller has open, in one thread,
on a database connection it closes at the end of the round. A stream waiting for
the next round holds no thread and no database connection.

**Whose they stay.** Every ``TOKEN_CHECK_SECONDS`` the same round authenticates each
open stream's token again (once per token): a stream whose token was revoked, expired
or lost its account ends then, within ``TOKEN_CHECK_SECONDS + LIST_POLL_SECONDS``.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from django.conf import settings
from django.db import connection
from rest_framework.exceptions import AuthenticationFailed

from executions.mcp_server import calls, listing, sessions

logger = logging.getLogger(__name__)
# How often the caller's tool list is looked at for an open listen stream.
LIST_POLL_SECONDS = 2.0
# How often an open stream's token is authenticated again.
TOKEN_CHECK_SECONDS = 10.0
_LEASES_KEY = "toolhub:mcp-listen:{}"
PER_TOKEN = "TOOLHUB_MCP_LISTEN_STREAMS_PER_TOKEN"  # noqa: S105 (a setting's name)
PER_PROCESS = "TOOLHUB_MCP_LISTEN_STREAMS_PER_PROCESS"

# Redis's clock for every lease, so web processes whose clocks differ agree on expiry.
_NOW = "local t = redis.call('TIME') local now = tonumber(t[1]) + tonumber(t[2]) / 1000000 "
_TAKE = (
    _NOW
    + "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now) "
    + "if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end "
    + "redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3]) "
    + "redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]) + 1) return 1"
)
_RENEW = (
    _NOW
    + "redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[2]) "
    + "redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1]) + 1) return 1"
)


class Full(Exception):
    """No place for one more stream: ``setting`` (``limit``) says how many there may be."""

    def __init__(self, setting: str, limit: int):
        holder = "This token has" if setting == PER_TOKEN else "This server process holds"
        super().__init__(
            f"{holder} {limit} listen streams open, as many as it may ({setting}={limit}): "
            "close one, or retry later."
        )
        self.setting, self.limit = setting, limit


class _MemoryLeases:
    """The leases of the embedded mode: one process, so counted here (no expiry needed)."""

    def __init__(self):
        self.held: dict[str, set[str]] = {}
        self.lock = threading.Lock()

    def take(self, token_hash: str, lease: str, limit: int) -> bool:
        with self.lock:
            held = self.held.setdefault(token_hash, set())
            if len(held) >= limit:
                return False
            held.add(lease)
            return True

    def drop(self, token_hash: str, lease: str) -> None:
        with self.lock:
            self.held.get(token_hash, set()).discard(lease)
            if not self.held.get(token_hash):
                self.held.pop(token_hash, None)


_memory = _MemoryLeases()


def lease_take(*, token_hash: str, lease: str) -> bool:
    """Take one of the token's places (False: it has as many as it may)."""
    limit = settings.TOOLHUB_MCP_LISTEN_STREAMS_PER_TOKEN
    client = sessions.redis_client()
    if client is None:
        return _memory.take(token_hash, lease, limit)
    seconds = settings.TOOLHUB_MCP_LISTEN_LEASE_SECONDS
    key = _LEASES_KEY.format(token_hash)
    return bool(client.eval(_TAKE, 1, key, limit, seconds, lease))


def lease_renew(leases: list[tuple[str, str]]) -> None:
    """Push back the expiry of every ``(token_hash, lease)`` (one round trip)."""
    client = sessions.redis_client()
    if client is None or not leases:
        return
    seconds = settings.TOOLHUB_MCP_LISTEN_LEASE_SECONDS
    pipe = client.pipeline(transaction=False)
    for token_hash, lease in leases:
        pipe.eval(_RENEW, 1, _LEASES_KEY.format(token_hash), seconds, lease)
    pipe.execute()


def lease_drop(*, token_hash: str, lease: str) -> None:
    client = sessions.redis_client()
    if client is None:
        _memory.drop(token_hash, lease)
    else:
        client.zrem(_LEASES_KEY.format(token_hash), lease)


def _fingerprints(wanted: dict[tuple, Any], recheck: list[Stream] = ()) -> dict[tuple, str]:
    """The tool-list digest of each ``(user id, toolset) -> user``, after authenticating
    the tokens of the streams in ``recheck`` again (a stream whose token no longer
    authenticates is marked ``ended``, with why); then the connection is closed: between
    rounds no stream keeps one open."""
    try:
        said: dict[str, str | None] = {}  # token hash -> why it no longer authenticates
        for stream in recheck:
            token = stream.request.token_hash
            if token not in said:
                said[token] = _refused(stream.request)
            stream.ended = said[token]
        return {key: listing.tools_fingerprint(user, key[1]) for key, user in wanted.items()}
    finally:
        connection.close()


def _refused(request: sessions.McpRequest) -> str | None:
    """Why ``request``'s token no longer authenticates (None: it still does)."""
    if request.recheck is None:
        return None
    try:
        request.recheck()
    except AuthenticationFailed as exc:
        return str(exc.detail)
    return None


@dataclass(eq=False)
class Stream:
    """One open listen stream: its caller, its lease, and the list it last saw."""

    request: sessions.McpRequest
    lease: str
    watcher: Watcher
    seen: str | None = None
    ended: str | None = None  # why the stream ends (its token no longer authenticates)
    checked_at: float = field(default_factory=time.monotonic)

    @property
    def key(self) -> tuple:
        return (self.request.user.pk, self.request.toolset)

    async def changes(self) -> AsyncIterator[bool]:
        """After each of the watcher's rounds: whether the caller's list changed."""
        watcher = self.watcher
        while True:
            await watcher.round.wait()
            if self.ended is not None:
                return
            now = watcher.fingerprints.get(self.key)
            changed = now is not None and self.seen is not None and now != self.seen
            if now is not None:
                self.seen = now
            yield changed


class Watcher:
    """This process's open streams, their places and their rounds (see the module)."""

    def __init__(self):
        self.streams: set[Stream] = set()
        self.fingerprints: dict[tuple, str] = {}
        self.round = anyio.Event()

    @asynccontextmanager
    async def opened(self, request: sessions.McpRequest):
        """A place for one more stream of ``request``'s caller (``Full`` when none)."""
        if len(self.streams) >= settings.TOOLHUB_MCP_LISTEN_STREAMS_PER_PROCESS:
            raise Full(PER_PROCESS, settings.TOOLHUB_MCP_LISTEN_STREAMS_PER_PROCESS)
        stream = Stream(request=request, lease=uuid.uuid4().hex, watcher=self)
        self.streams.add(stream)  # the process's place is taken before any await
        try:
            taken = await calls.in_thread(
                lambda: lease_take(token_hash=request.token_hash, lease=stream.lease)
            )
            if not taken:
                raise Full(PER_TOKEN, settings.TOOLHUB_MCP_LISTEN_STREAMS_PER_TOKEN)
            try:
                stream.seen = (
                    self.fingerprints.get(stream.key)
                    or (await calls.in_thread(_fingerprints, {stream.key: request.user}))[
                        stream.key
                    ]
                )
                yield stream
            finally:
                with anyio.CancelScope(shield=True):
                    await calls.in_thread(
                        lambda: lease_drop(token_hash=request.token_hash, lease=stream.lease)
                    )
        finally:
            self.streams.discard(stream)

    async def run(self) -> None:
        """Rounds of looks at the callers' lists, and lease renewals, until cancelled."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._look_every_round)
            tg.start_soon(self._renew_leases)

    async def _look_every_round(self) -> None:
        while True:
            await anyio.sleep(LIST_POLL_SECONDS)
            try:
                if self.streams:
                    open_now = list(self.streams)
                    wanted = {s.key: s.request.user for s in open_now}
                    self.fingerprints = await calls.in_thread(
                        _fingerprints, wanted, self._due_for_a_check(open_now)
                    )
            except Exception:  # database down: the streams wait for the next round
                logger.exception("MCP listen streams: the tool lists could not be read")
            finally:
                done, self.round = self.round, anyio.Event()
                done.set()

    @staticmethod
    def _due_for_a_check(open_now: list[Stream]) -> list[Stream]:
        """The streams whose token was last authenticated ``TOKEN_CHECK_SECONDS`` ago."""
        now = time.monotonic()
        due = [s for s in open_now if now - s.checked_at >= TOKEN_CHECK_SECONDS]
        for stream in due:
            stream.checked_at = now
        return due

    async def _renew_leases(self) -> None:
        every = settings.TOOLHUB_MCP_LISTEN_LEASE_SECONDS / 3
        while True:
            await anyio.sleep(every)
            leases = [(s.request.token_hash, s.lease) for s in list(self.streams)]
            try:
                await calls.in_thread(lease_renew, leases)
            except Exception:  # Redis down: the leases may lapse; the streams go on
                logger.exception("MCP listen streams: the leases could not be renewed")
