"""Keeping a call's output: the row holds at most the tool's ``max_response_bytes``,
the whole goes to an artifact (itself capped)."""

from __future__ import annotations

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
