"""An execution, or a refusal, as MCP answers a ``tools/call``.

- An MCP tool's result: its server's own ``content`` blocks, ``structuredContent``
  and ``isError``, as the server gave them (``executions.mcp_client.content``). Past
  the tool's ``max_response_bytes``, the blocks that fit come inline and the others
  as ``resource_link`` blocks to their bytes
  (``GET /api/v1/executions/<id>/output/content/<n>``).
- Any other tool's output: ``content`` (the JSON as text) plus ``structuredContent``
  when it is an object. Past the tool's ``max_response_bytes`` it comes as the
  stored preview and a ``resource_link`` to the whole
  (``GET /api/v1/executions/<id>/output``).
- A failed, rejected, expired or cancelled call: a result with ``isError``.
- Refusals the model can act on (arguments that do not match the schema, a rate
  limit, a queue or control that is down) are results with ``isError`` and the same
  details as the REST error body; the others (unknown, unreadable, inactive, not
  executable) are protocol errors, worded as the REST API words them, so a tool the
  caller may not read stays unknown.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from executions.models import Execution, ExecutionStatus
from executions.services import outputs
from toolhub.exceptions import ToolHubError

META_KEY = "io.toolhub/execution"
# Refusals a model can correct or wait out: answered as tool results with isError.
# Refusals the model can act on (change its arguments, wait, try again) come back as a
# tool result it reads; the others (unknown, not executable, quarantined) are protocol errors.
_TOOL_ERRORS = {
    "invalid_arguments",
    "guard_denied",
    "rate_limited",
    "controls_unavailable",
    "queue_unavailable",
    "database_unavailable",
    # The person connects their upstream account (the text names where), or the tool
    # needs a person at all: a person reading the conversation can act on either.
    "connection_required",
    "person_required",
}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def execution_meta(execution: Execution, base_url: str) -> dict:
    return {
        META_KEY: {
            "id": str(execution.pk),
            "status": execution.status,
            "url": f"{base_url}/api/v1/executions/{execution.pk}",
        }
    }


def connect_url(error: ToolHubError, base_url: str) -> str:
    """Where the person connects the account a ``connection_required`` refusal names."""
    path = str(error.extra.get("connect_url") or "")
    return f"{base_url}{path}" if path.startswith("/") else path


# Refusals a client sees as MCP's unknown tool (a tool outside the toolset is not listed).
_UNKNOWN_TOOL = ("tool_not_found", "tool_not_in_toolset")


def refusal(error: ToolHubError, name: str, base_url: str = "") -> types.CallToolResult:
    """A refused call: a tool result with isError, or the protocol error (raised)."""
    execution_id = error.extra.get("execution_id")
    body = {"code": error.code, "message": error.message, "execution_id": execution_id}
    if error.details is not None:
        body["details"] = error.details
    if error.code == "connection_required":
        body["connect_url"] = connect_url(error, base_url)
        body["provider"] = error.extra.get("provider")
    if error.code not in _TOOL_ERRORS:
        raise MCPError(
            types.INVALID_PARAMS,
            f"Unknown tool: {name}" if error.code in _UNKNOWN_TOOL else error.message,
            data=body,
        )
    lines = [error.message]
    if error.code == "invalid_arguments":
        lines += [
            f"- {p.get('path')}: {p.get('message')} (expected {p.get('expected')})"
            for p in error.details or []
        ]
    elif error.code == "guard_denied":
        lines += [f"- {d.get('guard')}: {d.get('message')}" for d in error.details or []]
    elif error.code == "connection_required":
        lines.append(f"Connect it here, then call again: {body['connect_url']}")
    retry = (getattr(error, "headers", None) or {}).get("Retry-After")
    if retry is not None:
        body["retry_after_seconds"] = int(retry)
    return types.CallToolResult(
        content=[types.TextContent(text="\n".join(lines))],
        structured_content={"error": body},
        is_error=True,
    )


def finished(execution: Execution, base_url: str, *, structured: bool) -> types.CallToolResult:
    """A call in its final status. ``structured``: the tool declares an output schema
    (its structuredContent is the output object; otherwise only objects are given)."""
    meta = execution_meta(execution, base_url)
    upstream = _upstream_result(execution, base_url, meta)
    if upstream is not None:
        return upstream
    if execution.status != ExecutionStatus.SUCCEEDED:
        message = execution.error_message or f"The call ended {execution.status}."
        kind = execution.error_type or execution.reason_code or execution.status
        return types.CallToolResult(
            content=[types.TextContent(text=f"{kind}: {message}")], is_error=True, _meta=meta
        )
    output = execution.output_data
    if execution.output_truncated:
        return _truncated(execution, output, base_url, meta)
    result = types.CallToolResult(content=[types.TextContent(text=_text(output))], _meta=meta)
    if isinstance(output, dict) or structured:
        result.structured_content = output if isinstance(output, dict) else {"result": output}
    return result


def _upstream_result(execution: Execution, base_url: str, meta) -> types.CallToolResult | None:
    """An MCP tool's result as its server gave it: on success, and on a failure the
    server reported (``isError``). None for anything else (ToolHub's own refusals and
    failures, other tools, records from before the blocks were kept)."""
    output = execution.output_data
    if execution.output_truncated:
        try:
            output = outputs.whole_output(execution)
        except (outputs.OutputAltered, OSError):
            return None  # the generic preview and link say what is left
    blocks = outputs.upstream_content(execution, output)
    if blocks is None:
        return None
    failed_upstream = execution.status == ExecutionStatus.FAILED and output.get("isError")
    if execution.status != ExecutionStatus.SUCCEEDED and not failed_upstream:
        return None
    if execution.output_truncated:
        blocks = _fitting(execution, blocks, base_url)
    try:
        return types.CallToolResult.model_validate(
            {
                "content": blocks,
                "structuredContent": output.get("structuredContent"),
                "isError": bool(output.get("isError")),
                "_meta": meta,
            }
        )
    except ValidationError:
        return None


def _fitting(execution: Execution, blocks: list[dict], base_url: str) -> list[dict]:
    """The blocks, in order, inline while they fit in the tool's ``max_response_bytes``;
    each one past it as a ``resource_link`` to its own bytes."""
    budget = execution.tool.max_response_bytes if execution.tool_id else 0
    fitted: list[dict] = []
    for index, block in enumerate(blocks):
        size = len(json.dumps(block, ensure_ascii=False, default=str).encode())
        if size <= budget:
            fitted.append(block)
            budget -= size
            continue
        budget = 0  # keep the order: nothing after a linked block comes inline
        body = outputs.block_body(block)
        if body is None:  # a link already, or nothing of its own to fetch
            fitted.append(block)
            continue
        data, content_type = body
        fitted.append(
            {
                "type": "resource_link",
                "uri": f"{base_url}/api/v1/executions/{execution.pk}/output/content/{index}",
                "name": f"{block.get('type')} {index} of execution {execution.pk}",
                "mimeType": content_type.split(";")[0],
                "size": len(data),
            }
        )
    return fitted


def _truncated(execution: Execution, output: Any, base_url: str, meta) -> types.CallToolResult:
    preview = (output or {}).get("preview", "") if isinstance(output, dict) else ""
    size = (output or {}).get("size_bytes") if isinstance(output, dict) else None
    content: list = [
        types.TextContent(
            text=f"The output ({size} bytes) is larger than this tool returns inline; "
            f"its start follows, the whole is at the link.\n{preview}"
        )
    ]
    if execution.output_artifact:
        content.append(
            types.ResourceLink(
                uri=f"{base_url}/api/v1/executions/{execution.pk}/output",
                name=f"output of execution {execution.pk}",
                mime_type="application/json",
                size=size,
            )
        )
    return types.CallToolResult(content=content, _meta=meta)


def still_running(execution: Execution, base_url: str) -> types.CallToolResult:
    """A call that has not finished by the time this request may wait."""
    url = f"{base_url}/api/v1/executions/{execution.pk}"
    return types.CallToolResult(
        content=[
            types.TextContent(
                text=f"The call is still {execution.status} (execution {execution.pk}). "
                f"Its result will be at GET {url} (same token)."
            )
        ],
        is_error=True,
        _meta=execution_meta(execution, base_url),
    )


def awaiting_approval(
    execution: Execution, approval_id: str | None, base_url: str
) -> types.CallToolResult:
    """A call still waiting for a human when this request may wait no longer."""
    url = f"{base_url}/api/v1/executions/{execution.pk}"
    meta = execution_meta(execution, base_url)
    meta[META_KEY]["approval_id"] = approval_id
    return types.CallToolResult(
        content=[
            types.TextContent(
                text=f"This call needs a person's approval and is waiting for it "
                f"(execution {execution.pk}, approval {approval_id}). It runs once approved; "
                f"its result will be at GET {url} (same token)."
            )
        ],
        is_error=True,
        _meta=meta,
    )
