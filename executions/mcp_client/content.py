"""A tool call's result as the upstream gave it: its MCP content blocks and
``structuredContent``, kept in MCP's own JSON form (``mimeType``, ``structuredContent``,
``isError``), so a caller at ToolHub's ``/mcp`` gets the blocks the upstream sent and a
REST caller reads the same blocks in ``output.content`` (docs/mcp-server.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# --------------------------------------------------------------------------- results


@dataclass
class CallOutcome:
    """A ``tools/call`` result as plain JSON, in MCP's shape."""

    is_error: bool
    content: list[dict[str, Any]]
    structured: Any = None
    error_message: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def as_output(self) -> dict[str, Any]:
        """The output an execution records: the MCP result's own fields (``content``;
        ``structuredContent`` and ``isError`` when the upstream gave them)."""
        output: dict[str, Any] = {"content": self.content}
        if self.structured is not None:
            output["structuredContent"] = self.structured
        if self.is_error:
            output["isError"] = True
        return output


def content_to_json(block: Any) -> dict[str, Any]:
    """One MCP content block (SDK model or dict) as MCP's JSON: every field the upstream
    sent (annotations and ``_meta`` included), nothing added."""
    if hasattr(block, "model_dump"):
        return block.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(block, Mapping):
        return dict(block)
    return {"type": "text", "text": str(block)}


def block_text(block: Mapping[str, Any]) -> str | None:
    """The text a block carries: a text block's, or an embedded text resource's."""
    if block.get("type") == "text":
        return str(block.get("text", ""))
    resource = block.get("resource")
    if block.get("type") == "resource" and isinstance(resource, Mapping) and "text" in resource:
        return str(resource["text"])
    return None


def _outcome_from_result(result: Any) -> CallOutcome:
    content = [content_to_json(b) for b in result.content or []]
    is_error = bool(result.is_error)
    message = None
    if is_error:
        texts = [t for t in (block_text(c) for c in content) if t is not None]
        message = "\n".join(texts) or "the MCP tool reported an error"
    return CallOutcome(
        is_error=is_error,
        content=content,
        structured=result.structured_content,
        error_message=message,
    )
