"""Tasks (MCP 2025-11-25, experimental): a call the client asked to run as a task.

The task is the execution. ``tools/call`` with ``task`` admits the call and answers at
once with ``CreateTaskResult`` (the task's id is the execution's); the call runs (or
waits for its approval) as any other. The ``mcp`` SDK's 2025-11-25 surface leaves
tasks out (its result check allows ``tools/call`` a ``CallToolResult`` only), so the
gate answers a task-augmented ``tools/call`` itself (``create``), before the SDK; the
``tasks/*`` methods are the SDK server's, as handlers of methods it does not know. ``tasks/get``, ``tasks/result`` and
``tasks/cancel`` read and act on the execution, so any web process answers them; the
caller's own executions only (any other id is unknown). A client that does not ask
for a task keeps the plain ``tools/call``.

| Execution | Task status |
|---|---|
| ``queued``, ``running``, ``pending_approval`` (message: waiting for approval) | ``working`` |
| ``succeeded`` | ``completed`` |
| ``cancelled`` | ``cancelled`` |
| any other final status | ``failed`` (message: the error) |

``tasks/result`` waits for a final status (polling the record, holding no thread
between looks) and answers what ``tools/call`` would have: the tool's result, or a
result with ``isError`` saying how the call ended.
"""

from __future__ import annotations

import anyio
import mcp_types as types
from django.conf import settings
from mcp.shared.exceptions import MCPError

from executions.mcp_server import calls, results
from executions.models import Execution, ExecutionStatus
from toolhub.db.pool import DatabaseUnavailable

# The revision whose clients ask for tasks this way (2026-07-28 has an extension instead).
TASKS_REVISION = "2025-11-25"
POLL_SECONDS = 1.0
RELATED_TASK_KEY = "io.modelcontextprotocol/related-task"

CAPABILITY = types.ServerTasksCapability(
    cancel=types.TasksCancelCapability(),
    requests=types.ServerTasksRequestsCapability(
        tools=types.TasksToolsCapability(call=types.TasksCallCapability())
    ),
)
# Every tool may run as a task (listed to 2025-11-25 clients).
EXECUTION = {"taskSupport": "optional"}


def _when(value) -> str:
    return value.isoformat().replace("+00:00", "Z")


def task_of(execution: Execution) -> types.Task:
    status = execution.status
    message = None
    if not execution.is_terminal:
        state = "working"
        if status == ExecutionStatus.PENDING_APPROVAL:
            message = "waiting for a person's approval"
    elif status == ExecutionStatus.SUCCEEDED:
        state = "completed"
    elif status == ExecutionStatus.CANCELLED:
        state = "cancelled"
    else:
        state = "failed"
        message = execution.error_message or f"The call ended {status}."
    changed = execution.finished_at or execution.started_at or execution.created_at
    return types.Task(
        task_id=str(execution.pk),
        status=state,
        status_message=message,
        created_at=_when(execution.created_at),
        last_updated_at=_when(changed),
        ttl=None,  # kept as long as the execution record (docs/operations.md: retention)
        poll_interval=int(POLL_SECONDS * 1000),
    )


def wire(execution: Execution) -> dict:
    """The execution's task as sent: ``ttl`` is said even when null (unlimited), which
    the spec requires and a plain dump would leave out."""
    task = task_of(execution)
    return {**task.model_dump(by_alias=True, mode="json", exclude_none=True), "ttl": task.ttl}


def is_task_call(message: dict, request, headers) -> bool:
    """A ``tools/call`` request (not a notification) asking to run as a task, from a
    client that said it speaks the tasks revision (its session, or the header)."""
    params = message.get("params")
    said = request.client(headers.get("mcp-protocol-version", ""))["protocol_version"]
    return (
        message.get("method") == "tools/call"
        and message.get("id") is not None
        and isinstance(params, dict)
        and isinstance(params.get("task"), dict)
        and said == TASKS_REVISION
    )


async def create(request, message: dict) -> dict:
    """The JSON-RPC answer to a task-augmented ``tools/call``: the task, once the call is
    admitted; a refusal as ``tools/call`` answers it (a tool result, or the error)."""
    params = message["params"]
    name = params.get("name")
    answer: dict = {"jsonrpc": "2.0", "id": message.get("id")}
    if not isinstance(name, str) or not name:
        answer["error"] = {"code": types.INVALID_PARAMS, "message": "The tool's name is missing."}
        return answer
    arguments = params.get("arguments")
    try:
        outcome = await calls.in_thread(
            calls.submit,
            request,
            name,
            {} if arguments is None else arguments,
            TASKS_REVISION,
            None,
            False,
        )
    except DatabaseUnavailable as error:  # as tools/call answers it: a result to wait out
        refused = results.refusal(error, name, request.base_url)
        answer["result"] = refused.model_dump(by_alias=True, mode="json", exclude_none=True)
        return answer
    if outcome.error is None:
        answer["result"] = {"task": wire(outcome.execution)}  # CreateTaskResult
        return answer
    try:
        refused = results.refusal(outcome.error, name, request.base_url)
    except MCPError as error:
        answer["error"] = error.error.model_dump(by_alias=True, mode="json", exclude_none=True)
        return answer
    answer["result"] = refused.model_dump(by_alias=True, mode="json", exclude_none=True)
    return answer


def _owned(request, task_id: str) -> Execution:
    """The caller's execution of that id; -32602 for any other (as an unknown tool)."""
    execution = calls.execution_owned(request, task_id)
    if execution is None:
        raise MCPError(types.INVALID_PARAMS, f"Unknown task: {task_id}")
    return execution


async def get(request, params: types.GetTaskRequestParams) -> dict:
    """``tasks/get``: the task (``GetTaskResult``)."""
    return wire(await calls.in_thread(_owned, request, params.task_id))


async def result(request, params: types.GetTaskPayloadRequestParams) -> types.CallToolResult:
    """``tasks/result``: waits for a final status up to ``TOOLHUB_MCP_APPROVAL_WAIT`` (a
    call may wait days for a person; the client polls ``tasks/get`` meanwhile), then
    -32603 saying the task has not finished."""
    execution = await calls.in_thread(_owned, request, params.task_id)
    deadline = anyio.current_time() + settings.TOOLHUB_MCP_APPROVAL_WAIT
    while not execution.is_terminal:
        if anyio.current_time() >= deadline:
            raise MCPError(
                types.INTERNAL_ERROR,
                f"Task {params.task_id} has not finished ({task_of(execution).status}); "
                "poll tasks/get and ask for its result once it has.",
            )
        await anyio.sleep(POLL_SECONDS)
        execution = await calls.in_thread(calls.execution_now, execution.pk)
    structured = await calls.in_thread(calls.structured_for, execution)
    answer = results.finished(execution, request.base_url, structured=structured)
    meta = dict(answer.meta or {})
    meta[RELATED_TASK_KEY] = {"taskId": str(execution.pk)}
    return answer.model_copy(update={"meta": meta})


async def cancel(request, params: types.CancelTaskRequestParams) -> dict:
    """``tasks/cancel``: the task, cancelled (``CancelTaskResult``)."""
    execution = await calls.in_thread(_owned, request, params.task_id)
    if execution.is_terminal or not await calls.in_thread(calls.cancel, request, execution.pk):
        raise MCPError(
            types.INVALID_PARAMS,
            f"Cannot cancel task {params.task_id}: it has already ended "
            f"({task_of(execution).status}).",
        )
    return wire(await calls.in_thread(calls.execution_now, execution.pk))
