"""Who is calling over MCP, with which client, and the 2025 revisions' sessions.

The server itself is stateless. A 2025 client still gets an ``Mcp-Session-Id`` at
``initialize``, so the client's name, version and negotiated revision (which it
sends only then) reach the record of every later call: the session is a record in
the shared cache (Redis), readable by every web process, bound to the token that
opened it. The 2026-07-28 revision sends them with each request instead.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.cache import cache

_SESSION_KEY = "toolhub:mcp-session:{}"
_CALL_KEY = "toolhub:mcp-call:{}:{}:{}"
# A call's cancellation can arrive while it waits for approval: keep its id as long.
_CALL_TTL_SECONDS = 24 * 3600


@dataclass(frozen=True)
class Session:
    """What a 2025 client said at ``initialize``, kept for its later requests."""

    id: str
    token_hash: str
    client_name: str = ""
    client_version: str = ""
    protocol_version: str = ""


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
    extra: dict = field(default_factory=dict)

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
    *, token_hash: str, client_name: str, client_version: str, protocol_version: str
) -> Session:
    session = Session(
        id=uuid.uuid4().hex,
        token_hash=token_hash,
        client_name=client_name[:200],
        client_version=client_version[:100],
        protocol_version=protocol_version[:20],
    )
    cache.set(_SESSION_KEY.format(session.id), session.__dict__, settings.TOOLHUB_MCP_SESSION_TTL)
    return session


def session_find(session_id: str, token_hash: str) -> Session | None:
    """The session, if it exists and the same token opened it (its idle time restarts)."""
    key = _SESSION_KEY.format(session_id)
    found = cache.get(key)
    if not isinstance(found, dict) or found.get("token_hash") != token_hash:
        return None
    cache.touch(key, settings.TOOLHUB_MCP_SESSION_TTL)
    return Session(**found)


def session_close(session_id: str, token_hash: str) -> bool:
    if session_find(session_id, token_hash) is None:
        return False
    cache.delete(_SESSION_KEY.format(session_id))
    return True


def _call_key(request: McpRequest, rpc_id: Any) -> str:
    session_id = request.session.id if request.session else ""
    return _CALL_KEY.format(request.token_hash, session_id, str(rpc_id)[:100])


def call_remember(request: McpRequest, rpc_id: Any, execution_id: str) -> None:
    """The execution a JSON-RPC request made, so a cancellation that reaches another
    process (the 2025 revisions send it as a separate POST) finds it."""
    cache.set(_call_key(request, rpc_id), execution_id, _CALL_TTL_SECONDS)


def call_forget(request: McpRequest, rpc_id: Any) -> None:
    cache.delete(_call_key(request, rpc_id))


def call_find(request: McpRequest, rpc_id: Any) -> str | None:
    return cache.get(_call_key(request, rpc_id))
