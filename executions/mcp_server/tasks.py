"""Tasks: a call that runs as a task, whose task is its execution.

Two wire shapes. **2026-07-28, the tasks extension** (``io.modelcontextprotocol/tasks``):
the server decides; a call whose request names the extension in its client
capabilities and that has not finished when ``tools/call`` would answer (it waits for a
person, or runs past the wait) is answered with the task (``resultType: "task"``)
instead of waiting; ``tasks/get`` gives the task and, once it has ended, its result
(``completed`` for any final status but ``cancelled``: an ``isError`` result is a
completed task there), ``tasks/update`` is acknowledged (ToolHub asks nothing of a
client during a task), ``tasks/cancel`` is an empty acknowledgement.

**2025-11-25, experimental tasks**: the client asks, below.

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
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

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


EXTENSION = "io.modelcontextprotocol/tasks"
_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"


def client_takes_tasks(params) -> bool:
    """Whether the request's client capabilities name the tasks extension (2026-07-28)."""
    capabilities = (params.meta or {}).get(_CLIENT_CAPABILITIES)
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and EXTENSION in extensions


def answered_as_task(execution: Execution, revision: str, params) -> bool:
    """Whether ``tools/call`` answers with the task: the call waits for a person or runs
    on, and its 2026-07-28 client takes tasks (the extension)."""
    return (
        not execution.is_terminal
        and revision in MODERN_PROTOCOL_VERSIONS
        and client_takes_tasks(params)
    )


def modern_task(execution: Execution, base_url: str, *, created: bool = False) -> dict:
    """The execution as the extension's task: ``CreateTaskResult`` (``created``) or
    ``GetTaskResult``, with the call's result once it has ended."""
    task = task_of(execution)
    status = task.status if task.status in ("working", "cancelled") else "completed"
    found: dict = {
        "resultType": "task" if created else "complete",
        "taskId": task.task_id,
        "status": status,
        "createdAt": task.created_at,
        "lastUpdatedAt": task.last_updated_at,
        "ttlMs": None,  # kept as long as the execution record
        "pollIntervalMs": task.poll_interval,
    }
    if task.status_message and status != "completed":
        found["statusMessage"] = task.status_message
    if status == "completed":
        answer = _finished(execution, base_url)
        found["result"] = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
    return found


def _finished(execution: Execution, base_url: str) -> types.CallToolResult:
    """What ``tools/call`` answers for the ended call (reads its tool's output schema)."""
    return results.finished(execution, base_url, structured=calls.structured_for(execution))


def created_task(execution: Execution, base_url: str) -> dict:
    """``CreateTaskResult`` (2026-07-28): the call's task, as ``tools/call``'s answer."""
    return modern_task(execution, base_url, created=True)


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


async def get(request, params: types.GetTaskRequestParams, modern: bool) -> dict:
    """``tasks/get``: the task (``GetTaskResult``), in the caller's revision's shape."""
    if modern:
        return await calls.in_thread(_modern_get, request, params.task_id)
    return wire(await calls.in_thread(_owned, request, params.task_id))


def _modern_get(request, task_id: str) -> dict:
    return modern_task(_owned(request, task_id), request.base_url)


async def update(request, params: types.GetTaskRequestParams, modern: bool) -> dict:
    """``tasks/update`` (2026-07-28): acknowledged for a known task. ToolHub asks a
    client nothing during a task, so no response is outstanding and each is ignored."""
    await calls.in_thread(_owned, request, params.task_id)
    return {"resultType": "complete"}


async def result(
    request, params: types.GetTaskPayloadRequestParams, modern: bool
) -> types.CallToolResult:
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
    answer = await calls.in_thread(_finished, execution, request.base_url)
    meta = dict(answer.meta or {})
    meta[RELATED_TASK_KEY] = {"taskId": str(execution.pk)}
    return answer.model_copy(update={"meta": meta})


async def cancel(request, params: types.CancelTaskRequestParams, modern: bool) -> dict:
    """``tasks/cancel``: the task, cancelled (``CancelTaskResult``); at 2026-07-28 an
    empty acknowledgement, whatever the task's state."""
    execution = await calls.in_thread(_owned, request, params.task_id)
    if modern:
        if not execution.is_terminal:
            await calls.in_thread(calls.cancel, request, execution.pk)
        return {"resultType": "complete"}
    if execution.is_terminal or not await calls.in_thread(calls.cancel, request, execution.pk):
        raise MCPError(
            types.INVALID_PARAMS,
            f"Cannot cancel task {params.task_id}: it has already ended "
            f"({task_of(execution).status}).",
        )
    return wire(await calls.in_thread(calls.execution_now, execution.pk))
