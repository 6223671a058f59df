"""The ``mcp`` SDK's low-level server with ToolHub's ``tools/list`` and ``tools/call``.

Stateless (``StreamableHTTPSessionManager(stateless=True)``): nothing of a client is
kept in a process between requests, so any web process answers any request. The
SDK answers ``initialize`` (2025 revisions) and ``server/discover`` (2026-07-28)
itself; ``gate`` authenticates first and puts the ``McpRequest`` in the scope.
"""

from __future__ import annotations

import hashlib
import math
import time
import typing
from typing import Any

import anyio
import mcp_types as types
from django.conf import settings
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError, UrlElicitationRequiredError
from mcp.shared.subscriptions import (
    SUBSCRIPTION_ID_META_KEY,
    ToolsListChanged,
    event_to_notification,
)
from mcp_types import LOG_LEVEL_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from executions.mcp_server import calls, listing, results, sessions, tasks
from executions.models import Execution, ExecutionStatus
from executions.services import relay
from toolhub.db.pool import RETRY_AFTER_SECONDS, DatabaseUnavailable

SCOPE_KEY = "toolhub.mcp"
# MCP's log levels, least severe first.
LOG_LEVELS = typing.get_args(types.LoggingLevel)
_STATE_KEY_LABEL = "toolhub.mcp.request-state:"
# While a call runs or waits, a client that asked for progress hears from it this often.
PROGRESS_SECONDS = 1.0
# How often a call waiting for approval (and then its run) looks at its execution.
APPROVAL_POLL_SECONDS = 1.0
# The handshake revision that has URL-mode elicitation (and its -32042 error).
URL_ELICITATION_REVISION = "2025-11-25"


class ToolHubServer(Server):
    """Says ``tools.listChanged`` at ``initialize``: the gate's GET stream tells
    a 2025 session's client when its list changes."""

    def create_initialization_options(self, notification_options=None, *args, **kwargs):
        options = notification_options or NotificationOptions(tools_changed=True)
        initialization = super().create_initialization_options(options, *args, **kwargs)
        # Tasks (2025-11-25): any tools/call may run as one (``executions.mcp_server.tasks``).
        initialization.capabilities.tasks = tasks.CAPABILITY
        return initialization


def request_of(ctx) -> sessions.McpRequest:
    found = ctx.request.scope.get(SCOPE_KEY) if ctx.request is not None else None
    if found is None:  # only the gate serves this server
        raise MCPError(types.INTERNAL_ERROR, "The request did not come through the gate.")
    return found


class Progress:
    """What a caller hears while its call waits or runs.

    - ``notifications/progress``, for a call whose client sent a ``progressToken``:
      ToolHub's own every ``PROGRESS_SECONDS``, and the upstream's own as it reports them
      (``executions.services.relay``; once those come, they drive it). Progress only ever
      grows: an upstream's values count on from past ToolHub's last (an upstream's first
      ``0`` is said when nothing was said before it).
    - ``notifications/message``, the upstream's log messages, for a caller that asked for
      them: at 2025 revisions its session's ``logging/setLevel``, at 2026-07-28 the
      request's ``io.modelcontextprotocol/logLevel``; at that level and above.
    """

    def __init__(self, ctx, params, request: sessions.McpRequest):
        meta = params.meta or {}
        self.token = meta.get("progressToken", meta.get("progress_token"))
        level = meta.get(LOG_LEVEL_META_KEY)
        if level is None and request.session is not None:
            level = request.session.log_level
        self.log_level = level if level in LOG_LEVELS else None
        self.ctx = ctx
        self.count: float | None = None  # the last progress said, none yet
        self.message = "running"
        self.execution_id = None  # known once the call is admitted
        self.base: float | None = None  # where the upstream's values start, once relayed

    @property
    def listening(self) -> bool:
        return self.token is not None or self.log_level is not None

    def admitted(self, execution: Execution) -> None:
        """The call is admitted (in a worker thread, before it can run): its worker is
        told what the caller listens to beyond progress."""
        self.execution_id = execution.pk
        if self.log_level is not None and not execution.is_terminal:
            relay.want(execution.pk, log_level=self.log_level)

    async def report(self, message: str | None = None) -> None:
        if message:
            self.message = message
        if self.token is None or self.base is not None:
            return
        self.count = (self.count or 0.0) + 1
        await self._send(self.count, None, self.message)

    async def _send(self, progress: float, total: float | None, message: str | None) -> None:
        await self.ctx.session.send_progress_notification(
            self.token, progress, total, message, related_request_id=self.ctx.request_id
        )

    async def relayed(self) -> None:
        """What the upstream said since the last look, sent on."""
        if self.execution_id is None:
            return
        for event in await calls.in_thread(relay.take, self.execution_id):
            if event.get("kind") == "log":
                await self._log(event)
            elif self.token is not None:
                await self._progress(event)

    async def _log(self, event: dict) -> None:
        level = event.get("level")
        if self.log_level is None or level not in LOG_LEVELS:
            return
        if LOG_LEVELS.index(level) < LOG_LEVELS.index(self.log_level):
            return
        logger_name = event.get("logger")
        await self.ctx.session.send_log_message(
            level,
            event.get("data"),
            logger_name if isinstance(logger_name, str) else None,
            related_request_id=self.ctx.request_id,
        )

    async def _progress(self, event: dict) -> None:
        value, total = event.get("progress"), event.get("total")
        if not isinstance(value, int | float) or not math.isfinite(value):
            return
        if not isinstance(total, int | float) or not math.isfinite(total):
            total = None
        if self.base is None:
            self.base = 0.0 if self.count is None else self.count + 1
        progress = self.base + float(value)
        if self.count is not None and progress <= self.count:
            return  # not more than already said
        self.count = progress
        total = self.base + float(total) if isinstance(total, int | float) else None
        message = event.get("message")
        await self._send(progress, total, message if isinstance(message, str) else None)

    async def tick(self) -> None:
        since = 0.0
        while True:
            await anyio.sleep(relay.POLL_SECONDS)
            since += relay.POLL_SECONDS
            await self.relayed()
            if since >= PROGRESS_SECONDS:
                since = 0.0
                await self.report()

    async def during(self, work):
        """Await ``work()`` while relaying (see the class)."""
        if not self.listening:
            return await work()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.tick)
            try:
                result = await work()
            finally:
                tg.cancel_scope.cancel()
        await self.relayed()  # what the upstream said last, before the answer
        return result


async def set_log_level(ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
    """``logging/setLevel`` (2025 revisions): the session's calls relay their upstream's
    log messages at that level and above. Without a session there is nothing to keep it
    in: the call's own ``_meta`` says it at 2026-07-28."""
    request = request_of(ctx)
    if request.session is not None:
        request.session = await calls.in_thread(
            sessions.session_set_log_level, request.session, params.level
        )
    return types.EmptyResult()


async def list_tools(ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    request = request_of(ctx)
    cursor = params.cursor if params is not None else None
    try:
        items, next_cursor = await calls.in_thread(
            listing.tools_page, request.user, request.toolset, cursor
        )
    except listing.BadCursor as exc:
        raise MCPError(types.INVALID_PARAMS, str(exc)) from None
    except DatabaseUnavailable as exc:
        data = {"code": exc.code, "retry_after_seconds": RETRY_AFTER_SECONDS}
        raise MCPError(types.INTERNAL_ERROR, exc.message, data=data) from None
    if ctx.protocol_version == tasks.TASKS_REVISION:  # each may run as a task
        items = [{**item, "execution": tasks.EXECUTION} for item in items]
    return types.ListToolsResult(
        tools=[types.Tool.model_validate(item) for item in items], next_cursor=next_cursor
    )


async def call_tool(ctx, params: types.CallToolRequestParams):
    try:
        return await _call_tool(ctx, params)
    except DatabaseUnavailable as error:
        # A tool result the model can wait out, as queue_unavailable; an admitted
        # call's execution_id is in it (its record ends failed: docs/operations.md).
        return results.refusal(error, params.name, request_of(ctx).base_url)


async def _call_tool(ctx, params: types.CallToolRequestParams):
    request = request_of(ctx)
    revision = request.client(ctx.protocol_version)["protocol_version"]
    progress = Progress(ctx, params, request)
    # A 2026-07-28 client back from connecting the person's account: a new call (once).
    connected = params.request_state is not None and calls.connect_from_state(params.request_state)
    if params.request_state is not None and not connected:  # still waiting for approval
        execution = await calls.in_thread(calls.execution_from_state, request, params.request_state)
        if execution is None:
            raise MCPError(types.INVALID_PARAMS, "Invalid or expired requestState.")
        structured = await calls.in_thread(calls.structured_for, execution)
        return await _awaiting_approval(request, execution, structured, revision, progress)
    return await _call(ctx, request, params, revision, progress, retried=connected)


async def _call(ctx, request, params, revision: str, progress: Progress, *, retried=False):
    admitted: dict[str, Any] = {}

    def on_admitted(execution: Execution) -> None:
        admitted["id"] = execution.pk
        progress.admitted(execution)
        # Any call that has not finished can be cancelled (``notifications/cancelled``,
        # on any web process), a running one too: its worker stops the work.
        if not execution.is_terminal:
            sessions.call_remember(request, ctx.request_id, str(execution.pk))
            admitted["remembered"] = True

    try:
        outcome = await progress.during(
            lambda: calls.in_thread(
                calls.submit, request, params.name, params.arguments or {}, revision, on_admitted
            )
        )
        if outcome.error is not None:
            if outcome.error.code == "connection_required" and not retried:
                return _connect_first(ctx, request, outcome.error, revision, params.name)
            return results.refusal(outcome.error, params.name, request.base_url)
        return await _answer(request, params, outcome, revision, progress)
    except DatabaseUnavailable as error:
        if "id" in admitted:
            error.extra.setdefault("execution_id", str(admitted["id"]))
        raise
    except anyio.get_cancelled_exc_class():
        # The client went away or cancelled: so does the call, running or not.
        if "id" in admitted:
            with anyio.CancelScope(shield=True):
                await calls.in_thread(calls.cancel, request, admitted["id"])
        raise
    finally:
        if admitted.get("remembered"):
            with anyio.CancelScope(shield=True):
                await calls.in_thread(sessions.call_forget, request, ctx.request_id)


async def _answer(request, params, outcome: calls.Outcome, revision: str, progress: Progress):
    """An admitted call's answer: its task (a 2026-07-28 client that takes tasks, the call
    not finished), its result once approved, still running, or its result."""
    execution = outcome.execution
    if tasks.answered_as_task(execution, revision, params):
        return await calls.in_thread(tasks.created_task, execution, request.base_url)
    if execution.status == ExecutionStatus.PENDING_APPROVAL:
        return await _awaiting_approval(request, execution, outcome.structured, revision, progress)
    if not execution.is_terminal:
        return results.still_running(execution, request.base_url)
    return results.finished(execution, request.base_url, structured=outcome.structured)


def _connect_first(ctx, request, error, revision: str, name: str):
    """The person must connect their upstream account first. A client that completes
    URL-mode elicitations is asked to open the connect page: at 2026-07-28 an
    ``input_required`` result whose retry is the same call, admitted anew (once); at
    2025-11-25 the ``-32042`` URL-elicitation-required error, after which the client calls
    again. Any other client gets the tool result naming the URL."""
    url = results.connect_url(error, request.base_url)
    provider = error.extra.get("provider") or ""
    message = f"{error.message} Connect it here: {url}"
    capabilities = getattr(ctx.session, "client_capabilities", None)
    elicits = getattr(capabilities, "elicitation", None) if capabilities else None
    if revision in MODERN_PROTOCOL_VERSIONS and getattr(elicits, "url", None) is not None:
        ask = types.ElicitRequest(params=types.ElicitRequestURLParams(message=message, url=url))
        return types.InputRequiredResult(
            input_requests={"connect": ask}, request_state=calls.state_for_connect(provider)
        )
    session = request.session
    if session is not None and session.url_elicitation and revision == URL_ELICITATION_REVISION:
        raise UrlElicitationRequiredError(
            [
                types.ElicitRequestURLParams(
                    message=message,
                    url=url,
                    elicitation_id=str(error.extra.get("execution_id") or provider),
                )
            ],
            message=error.message,
        )
    return results.refusal(error, name, request.base_url)


async def _awaiting_approval(request, execution, structured: bool, revision: str, progress):
    """Wait for the approver's decision and the run it leads to, in rounds.

    2026-07-28: one round (``TOOLHUB_MCP_APPROVAL_ROUND``), then an ``input_required``
    result whose ``requestState`` the client sends back to keep waiting. 2025
    revisions: up to ``TOOLHUB_MCP_APPROVAL_WAIT`` in this request (progress between
    rounds), then a result naming the execution, its approval and where to poll.
    """
    modern = revision in MODERN_PROTOCOL_VERSIONS
    budget = settings.TOOLHUB_MCP_APPROVAL_ROUND if modern else settings.TOOLHUB_MCP_APPROVAL_WAIT
    deadline = time.monotonic() + budget
    approval_id = await calls.in_thread(calls.approval_of, execution)
    await progress.report(f"waiting for approval {approval_id} (execution {execution.pk})")
    progress.execution_id = execution.pk  # also when a 2026 client comes back to wait
    while (remaining := deadline - time.monotonic()) > 0:
        # Polled, not blocked on: a call waiting for a person holds no thread meanwhile.
        await anyio.sleep(min(remaining, APPROVAL_POLL_SECONDS))
        if progress.listening:  # once approved, what the upstream says as it runs
            await progress.relayed()
        execution = await calls.in_thread(calls.execution_now, execution.pk)
        if execution.is_terminal:
            if progress.listening:
                await progress.relayed()
            return results.finished(execution, request.base_url, structured=structured)
        await progress.report(f"{execution.status} (execution {execution.pk})")
    if modern:
        return types.InputRequiredResult(request_state=calls.state_for(execution))
    return results.awaiting_approval(execution, approval_id, request.base_url)


async def listen(ctx, params: types.SubscriptionsListenRequestParams):
    """2026-07-28 ``subscriptions/listen``: the response is a stream of
    ``notifications/tools/list_changed`` for this caller (acknowledged first)."""
    request = request_of(ctx)
    meta = {SUBSCRIPTION_ID_META_KEY: ctx.request_id}
    wanted = bool(params.notifications.tools_list_changed)
    honored = types.SubscriptionFilter(tools_list_changed=True if wanted else None)
    ack = types.SubscriptionsAcknowledgedNotificationParams(notifications=honored, _meta=meta)
    await ctx.session.send_notification(
        types.SubscriptionsAcknowledgedNotification(params=ack), related_request_id=ctx.request_id
    )
    if not wanted:  # nothing else ToolHub publishes: hold the stream until the client goes
        await anyio.sleep_forever()
    if request.stream is None:  # the gate gives every listen request its place
        raise MCPError(types.INTERNAL_ERROR, "The listen stream has no place.")
    async for changed in request.stream.changes():
        if changed:
            await ctx.session.send_notification(
                event_to_notification(ToolsListChanged(), meta), related_request_id=ctx.request_id
            )
    # The token no longer authenticates: the stream ends as the spec closes one, with its
    # result (the client that listens again is answered 401), saying why.
    ended = {**meta, "io.toolhub/ended": request.stream.ended}
    return types.SubscriptionsListenResult(_meta=ended)


def build_server() -> ToolHubServer:
    server = ToolHubServer(
        "ToolHub",
        version="1",
        instructions=(
            "The tools this agent may use, governed by ToolHub: each call is checked, "
            "rate-limited, approved where a tool needs it and recorded."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=listen,
        on_set_logging_level=set_log_level,
        # ToolHub validates arguments itself (structured problems as a tool result).
        get_tool_input_schema=lambda name: None,
    )
    for method, params_type, handler in (
        ("tasks/get", types.GetTaskRequestParams, tasks.get),
        ("tasks/result", types.GetTaskPayloadRequestParams, tasks.result),
        ("tasks/cancel", types.CancelTaskRequestParams, tasks.cancel),
        ("tasks/update", types.GetTaskRequestParams, tasks.update),
    ):
        server.add_request_handler(method, params_type, _with_request(handler))
    server.extensions[tasks.EXTENSION] = {}  # said at server/discover (2026-07-28)
    # The SDK's default middleware opens an OpenTelemetry span per message; ToolHub
    # installs no exporter, so it would only cost time on every call.
    server.middleware = [request_state_boundary()]
    return server


def _with_request(handler):
    """``handler(request, params, modern)`` as the SDK calls a handler: ``(ctx, params)``."""

    async def handle(ctx, params):
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        return await handler(request_of(ctx), params, modern)

    return handle


def _caller_and_path(ctx) -> str:
    request = request_of(ctx)
    client = request.delegation.client_id if request.delegation else ""
    return f"user={request.user.pk} path=/mcp/{request.toolset or ''} client={client}"


def request_state_boundary() -> RequestStateBoundary:
    """The SDK's seal on a 2026-07-28 ``requestState``: encrypted under a key derived
    from ``SECRET_KEY`` (every web process shares it; ``SECRET_KEY_FALLBACKS`` still
    open older states), good for ``TOOLHUB_MCP_REQUEST_STATE_TTL`` seconds, for the
    same method, tool and arguments (their digest), caller and path (toolset) only.
    Anything else is ``-32602`` "Invalid or expired requestState"."""
    secrets = dict.fromkeys([settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS])
    keys = [hashlib.sha256(f"{_STATE_KEY_LABEL}{secret}".encode()).digest() for secret in secrets]
    security = RequestStateSecurity(
        keys=keys, ttl=settings.TOOLHUB_MCP_REQUEST_STATE_TTL, bind_principal=_caller_and_path
    )
    return RequestStateBoundary(security, default_audience="ToolHub")


def build_manager() -> StreamableHTTPSessionManager:
    return StreamableHTTPSessionManager(
        app=build_server(),
        stateless=True,
        json_response=False,  # SSE: progress notifications ride the call's response
        max_request_body_size=settings.TOOLHUB_MCP_MAX_BODY_BYTES,
    )
