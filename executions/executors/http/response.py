"""The upstream's response read as a bounded stream and turned into the call's result."""

from __future__ import annotations

import base64
import codecs
import json
import math
import re
import time
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from executions.executors.base import ErrorType, ExecutorResult
from executions.executors.http.request import _Prepared
from executions.executors.http.values import (
    ERROR_EXCERPT_CHARS,
    RETRYABLE_STATUSES,
    _Failure,
    _timeout_failure,
)
from executions.redaction import trim_partial_secrets, with_encoded_forms


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when.timestamp() - time.time()
    if not math.isfinite(seconds):
        return None
    return max(0.0, round(seconds, 3))


def _holds_secret(body: bytes, secrets: list[str]) -> bool:
    return any(s.encode("utf-8", "ignore") in body for s in secrets if s)


def _response_headers(response: httpx.Response) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in response.headers.multi_items():
        key = name.lower()
        if key in ("set-cookie", "set-cookie2"):
            continue
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return headers


def read_body(response: httpx.Response, prepared: _Prepared, deadline: float) -> tuple[bytes, bool]:
    """Stream the body, keeping at most ``max_response_bytes`` (one more byte means truncated)."""
    limit = prepared.max_response_bytes
    buffer = bytearray()
    for chunk in response.iter_bytes():
        buffer += chunk
        if len(buffer) > limit:
            return bytes(buffer[:limit]), True
        if time.monotonic() > deadline:
            raise _timeout_failure(prepared.timeout)
    return bytes(buffer), False


def interpret(
    response: httpx.Response,
    body: bytes,
    truncated: bool,
    secrets: list[str],
    metadata: dict[str, Any],
) -> ExecutorResult:
    """The call's result: ``{"status_code", "data", "headers"}``, a failure from HTTP 400 on.
    Nothing is redacted here (the runner does it); ``secrets`` keep a cut from
    splitting one and a body holding one from being encoded past recognition."""
    status = response.status_code
    text, data, data_encoding = _body_data(response, body, truncated, secrets)
    _record_response(response, body, truncated, metadata)
    output = {"status_code": status, "data": data, "headers": _response_headers(response)}
    if data_encoding:
        output["data_encoding"] = data_encoding
    if status < 400:
        return ExecutorResult(ok=True, output=output, upstream_status=status)
    excerpt = text or "(empty body)"
    if len(excerpt) > ERROR_EXCERPT_CHARS:
        excerpt = (
            trim_partial_secrets(excerpt[:ERROR_EXCERPT_CHARS], with_encoded_forms(secrets)) + "…"
        )
    reason = f" {response.reason_phrase}" if response.reason_phrase else ""
    raise _Failure(
        ErrorType.UPSTREAM,
        f"upstream returned HTTP {status}{reason}: {excerpt}",
        retryable=status in RETRYABLE_STATUSES,
        upstream_status=status,
        output=output,
    )


def _body_data(
    response: httpx.Response, body: bytes, truncated: bool, secrets: list[str]
) -> tuple[str, Any, str | None]:
    """The body as text, as ``data`` (JSON, text, base64 or None) and data's encoding."""
    text, undecodable = _decoded(body, response, truncated)
    if truncated:
        text = trim_partial_secrets(text, with_encoded_forms(secrets))
    data: Any = text if text else None
    if undecodable and not truncated and not _holds_secret(body, with_encoded_forms(secrets)):
        # Not text in its charset (an image, a PDF): kept whole as base64, not mangled
        # with replacement characters. A body holding a secret stays text, redacted.
        return text, base64.b64encode(body).decode("ascii"), "base64"
    content_type = response.headers.get("content-type", "")
    if text and not truncated:
        stripped = text.lstrip()
        if "json" in content_type.lower() or stripped[:1] in ("{", "["):
            try:
                data = json.loads(text)
            except (ValueError, RecursionError):
                data = text
    return text, data, None


# Media types that are text whatever bytes they hold (a JSON or text answer with one
# Latin-1 byte and no charset is still text, and must reach the guards as text).
_TEXTUAL = re.compile(
    r"\s*(?:text/|application/(?:json|xml|javascript|ecmascript|x-www-form-urlencoded"
    r"|x-ndjson|yaml|x-yaml|csv|problem\+json|problem\+xml)\b|[\w.-]+/[\w.-]+\+(?:json|xml)\b)",
    re.IGNORECASE,
)


def _decoded(body: bytes, response: httpx.Response, truncated: bool) -> tuple[str, bool]:
    """The body as text, and whether it is not text at all: in the declared charset,
    else UTF-8, else (a textual media type) Latin-1, which reads every byte. A cut body
    may end inside a character: that tail is left out, not taken for a wrong charset."""
    for codec in dict.fromkeys((response.charset_encoding, "utf-8")):
        if not codec:
            continue
        try:
            decoder = codecs.getincrementaldecoder(codec)()
            return decoder.decode(body, final=not truncated), False
        except (LookupError, UnicodeDecodeError):
            continue
    if _TEXTUAL.match(response.headers.get("content-type", "")):
        return body.decode("latin-1"), False
    return body.decode("utf-8", errors="replace"), True


def _record_response(
    response: httpx.Response, body: bytes, truncated: bool, metadata: dict[str, Any]
) -> None:
    """Size, type, the announced full size of a cut body and the upstream's Retry-After."""
    content_type = response.headers.get("content-type", "")
    metadata["truncated"] = truncated
    metadata["response_bytes"] = len(body)
    if content_type:
        metadata["content_type"] = content_type
    if truncated:
        length = response.headers.get("content-length")
        encoding = response.headers.get("content-encoding", "identity").lower()
        if length and length.isdecimal() and encoding == "identity":
            metadata["full_size"] = int(length)
    if response.status_code in (429, 503):
        retry_after = _retry_after(response.headers.get("retry-after"))
        if retry_after is not None:
            metadata["retry_after"] = retry_after
