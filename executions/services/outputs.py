"""Keeping a call's output: the row holds at most the tool's ``max_response_bytes``,
the whole goes to an artifact (itself capped)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from executions.models import Execution
from registry.models import Tool

logger = logging.getLogger(__name__)
PREVIEW_CHARS = 2000


def store_output(
    execution: Execution, tool: Tool, output: Any, *, cut: bool = False
) -> dict[str, Any]:
    """Cap what the row keeps at the tool's ``max_response_bytes``; keep the whole as an
    artifact, itself at most ``TOOLHUB_MAX_ARTIFACT_BYTES`` whatever the executor.

    ``complete`` says whether the artifact holds the whole output: false when the
    executor already cut the upstream's answer (``cut``) or the output is larger
    than the artifact cap (then the artifact is its first bytes, not valid JSON).
    """
    text = json.dumps(output, ensure_ascii=False, default=str)
    data = text.encode()
    size = len(data)
    fields: dict[str, Any] = {"output_size": size, "chars_out": len(text)}
    if size <= tool.max_response_bytes and not cut:
        fields.update(output_data=output, output_truncated=False)
        return fields
    cap = settings.TOOLHUB_MAX_ARTIFACT_BYTES
    complete = not cut and size <= cap
    data = data[:cap]
    fields.update(
        output_data={
            "truncated": True,
            "size_bytes": size,
            "complete": complete,
            # The record (and so the audit chain, through its content hash) holds the
            # stored output's digest: the artifact on disk can be checked against it.
            "sha256": hashlib.sha256(data).hexdigest(),
            "preview": text[: min(PREVIEW_CHARS, tool.max_response_bytes)],
        },
        output_truncated=True,
    )
    try:
        name = default_storage.save(f"executions/{execution.pk}.json", ContentFile(data))
    except Exception as exc:  # a full disk or an unreachable bucket must still end the call
        logger.error(
            "execution %s: the output (%d bytes) could not be stored: %s",
            execution.pk,
            size,
            exc.__class__.__name__,
        )
        raise ArtifactNotStored(fields) from exc
    fields["output_artifact"] = name
    return fields


class ArtifactNotStored(Exception):
    """The full output could not be kept; ``fields`` hold the row's preview of it."""

    def __init__(self, fields: dict[str, Any]):
        super().__init__("artifact not stored")
        self.fields = fields


# --------------------------------------------------------------------------- reading back


class OutputAltered(Exception):
    """The stored artifact no longer has the digest the record holds."""


def sha256_of(handle) -> str:
    """The sha256 of an open stored file, read in 1 MiB chunks from where it stands."""
    digest = hashlib.sha256()
    for chunk in iter(lambda: handle.read(1024 * 1024), b""):
        digest.update(chunk)
    return digest.hexdigest()


def open_artifact(execution: Execution):
    """The call's output artifact, opened and checked against the digest its record
    holds (``output_data.sha256``); raises ``OutputAltered``, or ``OSError`` when gone."""
    handle = default_storage.open(execution.output_artifact, "rb")
    recorded = (execution.output_data or {}).get("sha256")
    digest = sha256_of(handle)
    handle.seek(0)
    if recorded and digest != recorded:
        handle.close()
        logger.error("execution %s: its stored output was altered", execution.pk)
        raise OutputAltered(execution.pk)
    return handle


def whole_output(execution: Execution) -> Any:
    """The output as the tool returned it: the row's, or, when the row holds a preview,
    the artifact's (None when the artifact holds only the output's first bytes).
    Raises ``OutputAltered`` or ``OSError`` as ``open_artifact``."""
    if not execution.output_truncated:
        return execution.output_data
    if not execution.output_artifact or not (execution.output_data or {}).get("complete"):
        return None
    with open_artifact(execution) as handle:
        return json.loads(handle.read())


def upstream_content(execution: Execution, output: Any) -> list[dict[str, Any]] | None:
    """An MCP tool's content blocks, as its server gave them (``mcp_client.content``); None
    for other tools' outputs, and for records written before ToolHub kept the blocks
    (their output also had ``text`` and ``structured``)."""
    if execution.tool_type != "mcp" or not isinstance(output, dict) or "text" in output:
        return None
    blocks = output.get("content")
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        return None
    return blocks


def block_body(block: dict[str, Any]) -> tuple[bytes, str] | None:
    """A content block's own bytes and media type: an image's or audio's data, an
    embedded resource's blob or text, a text block's text; None for a link."""
    kind = block.get("type")
    resource = block.get("resource") if kind == "resource" else None
    source = resource if isinstance(resource, dict) else block
    mime = str(source.get("mimeType") or "")
    if kind in ("image", "audio") or (resource is not None and "blob" in source):
        encoded = source.get("data") if kind in ("image", "audio") else source.get("blob")
        try:
            data = base64.b64decode(str(encoded or ""), validate=True)
        except (binascii.Error, ValueError):
            return None
        return data, mime or "application/octet-stream"
    text = source.get("text") if kind in ("text", "resource") else None
    if text is None:
        return None
    return str(text).encode(), f"{mime or 'text/plain'}; charset=utf-8"
