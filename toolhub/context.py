"""Request-scoped context: who is acting, under which request id, from where.

Set by the request-id middleware (and by Celery tasks from their message), and
read by the audit service so each audit row carries the request id and client
address without every call site passing them through. An entry point other than
the REST API (the admin's test run, the MCP endpoint) says so with ``amend``:
the execution record keeps the entry point, the client's name and version and
the protocol revision it spoke.
"""

from __future__ import annotations

import contextvars
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class RequestContext:
    request_id: str = ""
    client_address: str | None = None
    entry_point: str = "api"
    client_name: str = ""
    client_version: str = ""
    protocol_version: str = ""
    oauth_client_id: str = ""  # the OAuth client a call is made through, if any
    oauth_client_name: str = ""


_current: contextvars.ContextVar[RequestContext] = contextvars.ContextVar(
    "toolhub_request_context",
    default=RequestContext(),  # noqa: B039 - frozen dataclass, immutable
)


def current() -> RequestContext:
    return _current.get()


def new_request_id() -> str:
    return uuid.uuid4().hex


@contextmanager
def bind(*, request_id: str | None = None, client_address: str | None = None):
    token = _current.set(
        RequestContext(request_id=request_id or new_request_id(), client_address=client_address)
    )
    try:
        yield _current.get()
    finally:
        _current.reset(token)


@contextmanager
def amend(**fields):
    """The current context with ``fields`` changed (entry point, client), for a block."""
    token = _current.set(replace(_current.get(), **fields))
    try:
        yield _current.get()
    finally:
        _current.reset(token)
