"""Who is calling over MCP, with which client, and the 2025 revisions' sessions.

The server itself is stateless. A 2025 client still gets an ``Mcp-Session-Id`` at
``initialize``, so the client's name, version and negotiated revision (which it
sends only then) reach the record of every later call: the session is a record in
the shared cache (Redis), readable by every web process, bound to the token that
opened it. The 2026-07-28 revision sends them with each request instead.

A session is stored only once the SDK has answered ``initialize`` with a result. A
token holds at most ``TOOLHUB_MCP_SESSIONS_PER_TOKEN``: an index per token (a sorted
set, session id by last use) names the least recently used one, which a new session
pushes out (its client gets 404 and initializes again, as after an expiry). Refusing
the new one instead would lock out, for a whole ``TOOLHUB_MCP_SESSION_TTL``, a client
that reconnects without ending its sessions, as most clients do.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field, replace
from functools import cache as once
from typing import Any

from django.conf import settings
from django.core.cache import cache

_SESSION_KEY = "toolhub:mcp-session:{}"
_INDEX_KEY = "toolhub:mcp-sessions:{}"
_CALL_KEY = "toolhub:mcp-call:{}:{}:{}"
# A call's cancellation can arrive while it waits for approval: keep its id as long.
_CALL_TTL_SECONDS = 24 * 3600


@once
def redis_client():
    """One client (and connection pool) per process. Django's cache gives each request
    context its own client, so each MCP request would open a new Redis connection."""
    if not settings.REDIS_URL:
        return None  # embedded: one process, the local-memory cache
    import redis

    return redis.Redis.from_url(
        settings.REDIS_URL,
        socket_connect_timeout=settings.TOOLHUB_REDIS_CONNECT_TIMEOUT,
        socket_timeout=settings.TOOLHUB_REDIS_TIMEOUT,
        health_check_interval=30,
    )


def _put(key: str, value: Any, ttl: int) -> None:
    client = redis_client()
    if client is None:
        cache.set(key, value, ttl)
    else:
        client.set(key, json.dumps(value), ex=ttl)


def _take(key: str, *, touch: int | None = None) -> Any:
    """The value at ``key`` (None when absent); ``touch``: its time to live starts over."""
    client = redis_client()
    if client is None:
        value = cache.get(key)
        if value is not None and touch:
            cache.touch(key, touch)
        return value
    if touch:
        pipe = client.pipeline(transaction=False)
        pipe.get(key)
        pipe.expire(key, touch)
        raw = pipe.execute()[0]
    else:
        raw = client.get(key)
    return json.loads(raw) if raw is not None else None


def _drop(key: str) -> None:
    client = redis_client()
    if client is None:
        cache.delete(key)
    else:
        client.delete(key)


@dataclass(frozen=True)
class Session:
    """What a 2025 client said at ``initialize``, kept for its later requests."""

    id: str
    token_hash: str
    client_name: str = ""
    client_version: str = ""
    protocol_version: str = ""
    # The client said at ``initialize`` that it completes URL-mode elicitations (2025-11-25):
    # a call that needs the person to connect an account is answered with one.
    url_elicitation: bool = False
    # ``logging/setLevel``: the least severe level of the upstream's log messages the
    # client hears while its calls run ("": none asked for, none relayed).
    log_level: str = ""


@dataclass
class McpRequest:
    """One HTTP request to the MCP endpoint, as the gate established it (``scope``)."""

    user: Any
    registry: Any
    token_hash: str
    request_id: str
    client_address: str | None
    base_url: str
    toolset: str | None = None
    session: Session | None = None
    client_name: str = ""
    client_version: str = ""
    protocol_version: str = ""
    stream: Any = None  # the listen stream's place (``streams.Stream``), for its handler
    delegation: Any = None  # an OAuth token's client, person, scopes (registry.oauth.delegation)
    extra: dict = field(default_factory=dict)
    # Authenticates the request's token again (raises AuthenticationFailed once it is
    # revoked or expired): what ends an open listen stream (``streams``).
    recheck: Any = field(default=None, repr=False, compare=False)
    # The request's trace context (its server span), for the worker threads, which run
    # in contexts of their own (``calls.bound`` makes it current there).
    trace_context: Any = field(default=None, repr=False, compare=False)

    def client(self, protocol_version: str) -> dict[str, str]:
        """The record's client fields (the session's, else what this request said)."""
        session = self.session
        return {
            "client_name": (session.client_name if session else "") or self.client_name,
            "client_version": (session.client_version if session else "") or self.client_version,
            "protocol_version": (session.protocol_version if session else "")
            or self.protocol_version
            or protocol_version,
        }


def session_open(
    *,
    token_hash: str,
    client_name: str,
    client_version: str,
    protocol_version: str,
    url_elicitation: bool = False,
) -> Session:
    """Store a session of ``token_hash``, pushing out its least recently used one(s)
    past ``TOOLHUB_MCP_SESSIONS_PER_TOKEN``."""
    session = Session(
        id=uuid.uuid4().hex,
        token_hash=token_hash,
        client_name=client_name[:200],
        client_version=client_version[:100],
        protocol_version=protocol_version[:20],
        url_elicitation=url_elicitation,
    )
    _put(_SESSION_KEY.format(session.id), session.__dict__, settings.TOOLHUB_MCP_SESSION_TTL)
    for pushed_out in _index_add(token_hash, session.id):
        _drop(_SESSION_KEY.format(pushed_out))
    return session


def session_set_log_level(session: Session, level: str) -> Session:
    """The session, now asking for log messages at ``level`` and above."""
    changed = replace(session, log_level=level)
    key, ttl = _SESSION_KEY.format(session.id), settings.TOOLHUB_MCP_SESSION_TTL
    client = redis_client()
    if client is None:
        if cache.get(key) is not None:
            cache.set(key, changed.__dict__, ttl)
    else:  # only while it exists: a session closed or pushed out meanwhile stays gone
        client.set(key, json.dumps(changed.__dict__), ex=ttl, xx=True)
    return changed


# Atomically: forget expired entries, add (or refresh) one, and take out the oldest past
# the cap; answers the ids taken out.
_INDEX_ADD = (
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[1]) - tonumber(ARGV[2])) "
    "redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4]) "
    "redis.call('EXPIRE', KEYS[1], ARGV[2]) "
    "local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3]) "
    "if over <= 0 then return {} end "
    "local out = redis.call('ZRANGE', KEYS[1], 0, over - 1) "
    "redis.call('ZREMRANGEBYRANK', KEYS[1], 0, over - 1) "
    "return out"
)


def _index_add(token_hash: str, session_id: str) -> list[str]:
    ttl, cap = settings.TOOLHUB_MCP_SESSION_TTL, settings.TOOLHUB_MCP_SESSIONS_PER_TOKEN
    now, key = time.time(), _INDEX_KEY.format(token_hash)
    client = redis_client()
    if client is not None:
        out = client.eval(_INDEX_ADD, 1, key, now, ttl, cap, session_id)
        return [item.decode() if isinstance(item, bytes) else item for item in out]
    # Embedded (one process): the index as a dict in the local-memory cache.
    index = {sid: used for sid, used in (cache.get(key) or {}).items() if used > now - ttl}
    index[session_id] = now
    order = sorted(index, key=index.get)
    out = order[: max(0, len(order) - cap)]
    cache.set(key, {sid: index[sid] for sid in order[len(out) :]}, ttl)
    return out


def _index_touch(*, key: str, session_id: str) -> None:
    """Embedded mode's "used now" (with Redis, ``session_find``'s pipeline does it)."""
    index = cache.get(key) or {}
    if session_id in index:
        index[session_id] = time.time()
        cache.set(key, index, settings.TOOLHUB_MCP_SESSION_TTL)


def _index_remove(token_hash: str, session_id: str) -> None:
    client = redis_client()
    key = _INDEX_KEY.format(token_hash)
    if client is not None:
        client.zrem(key, session_id)
        return
    index = cache.get(key) or {}
    index.pop(session_id, None)
    cache.set(key, index, settings.TOOLHUB_MCP_SESSION_TTL)


def session_find(session_id: str, token_hash: str) -> Session | None:
    """The session, if it exists and the same token opened it (its idle time restarts)."""
    ttl, key = settings.TOOLHUB_MCP_SESSION_TTL, _SESSION_KEY.format(session_id)
    client = redis_client()
    if client is None:
        found = _take(key, touch=ttl)
    else:  # one round trip: read, keep alive, and mark as used in the token's index
        pipe = client.pipeline(transaction=False)
        pipe.get(key)
        pipe.expire(key, ttl)
        pipe.zadd(_INDEX_KEY.format(token_hash), {session_id: time.time()}, xx=True)
        raw = pipe.execute()[0]
        found = json.loads(raw) if raw is not None else None
    if not isinstance(found, dict) or found.get("token_hash") != token_hash:
        return None
    if client is None:
        _index_touch(key=_INDEX_KEY.format(token_hash), session_id=session_id)
    known = {name: found[name] for name in Session.__dataclass_fields__ if name in found}
    return Session(**known)


def session_close(session_id: str, token_hash: str) -> bool:
    if session_find(session_id, token_hash) is None:
        return False
    _drop(_SESSION_KEY.format(session_id))
    _index_remove(token_hash, session_id)
    return True


def _call_key(request: McpRequest, rpc_id: Any) -> str:
    session_id = request.session.id if request.session else ""
    return _CALL_KEY.format(request.token_hash, session_id, str(rpc_id)[:100])


def call_remember(request: McpRequest, rpc_id: Any, execution_id: str) -> None:
    """The execution a JSON-RPC request made, so a cancellation that reaches another
    process (the 2025 revisions send it as a separate POST) finds it."""
    _put(_call_key(request, rpc_id), execution_id, _CALL_TTL_SECONDS)


def call_forget(request: McpRequest, rpc_id: Any) -> None:
    _drop(_call_key(request, rpc_id))


def call_find(request: McpRequest, rpc_id: Any) -> str | None:
    return _take(_call_key(request, rpc_id))
