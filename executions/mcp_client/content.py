"""A tool call's result: MCP content turned into JSON, binaries bounded."""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from executions.mcp_client.limits import DEFAULT_MAX_INLINE_BINARY_BYTES

# --------------------------------------------------------------------------- results


@dataclass
class CallOutcome:
    """A ``tools/call`` result mapped to plain JSON."""

    is_error: bool
    content: list[dict[str, Any]]
    structured: Any = None
    text: str = ""
    error_message: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def as_output(self) -> dict[str, Any]:
        return {"content": self.content, "structured": self.structured, "text": self.text}


# Environment values this long or longer are kept out of outputs and errors; shorter
# ones ("1", "true", "debug") are settings, and redacting them would mangle text.


def _binary_entry(kind: str, mime_type: str | None, data: str, max_inline: int) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": kind, "mime_type": mime_type}
    if len(data) <= max_inline:
        entry["data"] = data
        return entry
    try:
        size = len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        size = None
    entry["data_omitted"] = True
    entry["size_bytes"] = size
    return entry


def _text_entry(text: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "text", "text": text}
    stripped = text.strip()
    if stripped and stripped[0] in '{["-0123456789tfn':
        with contextlib.suppress(ValueError, RecursionError):
            entry["json"] = json.loads(stripped)
    return entry


def content_to_json(
    block: Any, *, max_inline_binary_bytes: int = DEFAULT_MAX_INLINE_BINARY_BYTES
) -> dict[str, Any]:
    """Map one MCP content block (SDK model or dict) to a JSON-safe dict."""
    if hasattr(block, "model_dump"):
        data = block.model_dump(mode="json", by_alias=False, exclude_none=True)
    elif isinstance(block, Mapping):
        data = dict(block)
    else:
        return {"type": "unknown", "value": str(block)}
    kind = data.get("type")
    if kind == "text":
        return _text_entry(str(data.get("text", "")))
    if kind in ("image", "audio"):
        mime = data.get("mime_type") or data.get("mimeType")
        return _binary_entry(kind, mime, str(data.get("data", "")), max_inline_binary_bytes)
    if kind == "resource":
        resource = data.get("resource") or {}
        entry: dict[str, Any] = {
            "type": "resource",
            "uri": str(resource.get("uri", "")),
            "mime_type": resource.get("mime_type") or resource.get("mimeType"),
        }
        if "text" in resource:
            entry.update(_text_entry(str(resource["text"])), type="resource")
        elif "blob" in resource:
            blob = _binary_entry(
                "resource", entry["mime_type"], str(resource["blob"]), max_inline_binary_bytes
            )
            if "data" in blob:
                entry["blob"] = blob["data"]
            else:
                entry.update(data_omitted=True, size_bytes=blob["size_bytes"])
        return entry
    if kind == "resource_link":
        return {
            "type": "resource_link",
            "uri": str(data.get("uri", "")),
            "name": data.get("name"),
            "mime_type": data.get("mime_type") or data.get("mimeType"),
            "description": data.get("description"),
        }
    data.pop("meta", None)
    data.pop("annotations", None)
    return data


def _outcome_from_result(result: Any, max_inline: int) -> CallOutcome:
    content = [content_to_json(b, max_inline_binary_bytes=max_inline) for b in result.content or []]
    texts = [c["text"] for c in content if c.get("type") == "text" and "text" in c]
    text = "\n".join(texts)
    is_error = bool(result.is_error)
    message = None
    if is_error:
        message = text or "the MCP tool reported an error"
    return CallOutcome(
        is_error=is_error,
        content=content,
        structured=result.structured_content,
        text=text,
        error_message=message,
    )
