"""``tools/call``: one call through ``execution_submit``, as the REST API makes it.

The sync parts run in worker threads (``in_thread``): admission, the wait for the
result (inline or from a Celery worker, as REST ``wait``), the wait for a human's
approval in short rounds (so progress can be reported between them), and
cancellation. The record says it came over MCP, from which client, in which
protocol revision (``toolhub.context``).
"""

from __future__ import annotations

import contextvars
import json
import threading
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import close_old_connections

from executions.mcp_server.sessions import McpRequest
from executions.models import Approval, EntryPoint, Execution
from executions.services.pipeline import execution_cancel, execution_submit
from registry.oauth.delegation import recorded_client
from registry.schema import tool_output_schema
from toolhub import context, tracing
from toolhub.db import pool
from toolhub.exceptions import ToolHubError

_limiter: anyio.CapacityLimiter | None = None
_threads = threading.local()


async def in_thread(fn: Callable, *args):
    """``fn(*args)`` in a worker thread with a usable database connection.

    At most ``TOOLHUB_MCP_THREADS`` at once per process. The thread borrows its
    connection from the process's pool and gives it back when ``fn`` returns (so a
    call waiting for approval between two looks holds none); one that cannot be had
    raises ``DatabaseUnavailable`` (``toolhub.db.pool``). A cancelled caller does not
    wait for the thread: a call's admission or wait goes on, and its cancellation
    (``cancel``) wakes it."""
    global _limiter
    if _limiter is None:
        _limiter = anyio.CapacityLimiter(settings.TOOLHUB_MCP_THREADS)

    def work():
        close_old_connections()
        try:
            return fn(*args)
        except pool.UNAVAILABLE_ERRORS as exc:
            raise pool.unavailable_from(exc) from None
        finally:
            close_old_connections()

    def run():
        # Each worker thread runs in a context of its own, kept: Django's cache clients
        # are per context, so in the request's (copied) context every call would open
        # a new Redis connection. What a call needs of the request it binds (``bound``).
        own = getattr(_threads, "context", None)
        if own is None:
            own = _threads.context = contextvars.Context()
        return own.run(work)

    return await anyio.to_thread.run_sync(run, limiter=_limiter, abandon_on_cancel=True)


@contextmanager
def bound(request: McpRequest, protocol_version: str):
    """The request's id, address and MCP client, for the records written in this block,
    in the request's trace."""
    with (
        tracing.attached(request.trace_context),
        context.bind(request_id=request.request_id, client_address=request.client_address),
        context.amend(
            entry_point=EntryPoint.MCP,
            **request.client(protocol_version),
            **recorded_client(request.delegation),
        ),
    ):
        yield


@dataclass(frozen=True)
class Outcome:
    """What admission made of a call: the execution as it stands, or the refusal."""

    execution: Execution | None = None
    error: ToolHubError | None = None
    structured: bool = False


def submit(
    request: McpRequest,
    name: str,
    arguments: Any,
    protocol_version: str,
    on_admitted: Callable[[Execution], None] | None,
    wait: bool = True,
) -> Outcome:
    """Admit and run (or queue) the call, waiting for its result as REST ``wait`` does
    (``wait=False``: not at all, a task's call)."""
    with bound(request, protocol_version):
        try:
            submitted = execution_submit(
                user=request.user,
                tool_ref=name,
                arguments=arguments,
                wait=wait,
                registry=request.registry,
                on_admitted=on_admitted,
                toolset=request.toolset,
            )
        except ToolHubError as error:
            return Outcome(error=error)
    execution = submitted.execution
    return Outcome(execution=execution, structured=structured_for(execution))


def structured_for(execution: Execution) -> bool:
    """Whether the call's tool declares an output schema (read from the parameters the
    admission already holds, when it does)."""
    return execution.tool is not None and tool_output_schema(execution.tool) is not None


def execution_now(execution_id) -> Execution:
    return Execution.objects.get(pk=execution_id)


def approval_of(execution: Execution) -> str | None:
    found = Approval.objects.filter(execution_id=execution.pk).values_list("pk", flat=True).first()
    return str(found) if found else None


def cancel(request: McpRequest, execution_id) -> bool:
    """Cancel the call if it has not finished (the REST API's cancel: a running call is
    stopped by its worker); False otherwise."""
    execution = Execution.objects.filter(pk=execution_id, principal=request.user).first()
    if execution is None or execution.is_terminal:
        return False
    with context.bind(request_id=request.request_id, client_address=request.client_address):
        try:
            execution_cancel(actor=request.user, execution=execution)
        except ToolHubError:
            return False  # it finished meanwhile
    return True


def state_for(execution: Execution) -> str:
    """The ``requestState`` a 2026-07-28 client sends back to keep waiting for ``execution``
    (the SDK's boundary seals it and binds it to the call: ``server.request_state_boundary``)."""
    return json.dumps({"execution": str(execution.pk)})


def state_for_connect(provider: str) -> str:
    """The ``requestState`` of a call that waits for its person to connect their account at
    ``provider``: its retry is the same call, admitted anew."""
    return json.dumps({"connect": provider})


def connect_from_state(state: str) -> bool:
    """Whether a (verified, unsealed) ``requestState`` is one of ``state_for_connect``."""
    try:
        data = json.loads(state)
    except ValueError:
        return False
    return isinstance(data, dict) and isinstance(data.get("connect"), str)


def execution_from_state(request: McpRequest, state: str) -> Execution | None:
    """The caller's execution a (verified, unsealed) ``requestState`` names."""
    try:
        data = json.loads(state)
    except ValueError:
        return None
    execution_id = data.get("execution") if isinstance(data, dict) else None
    return execution_owned(request, execution_id)


def execution_owned(request: McpRequest, execution_id: Any) -> Execution | None:
    """The caller's execution of that id (None for any other, or no id at all). An OAuth
    client acting for a person owns only the calls it made for them, as at the REST API
    (``selectors.execution_visible_to``)."""
    if not isinstance(execution_id, str):
        return None
    found = Execution.objects.filter(pk=execution_id, principal=request.user)
    if request.delegation is not None:
        found = found.filter(oauth_client_id=request.delegation.client_id)
    try:
        return found.first()
    except (ValueError, ValidationError):
        return None
