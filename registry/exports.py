"""Streamed CSV and JSON Lines exports of any queryset, in constant memory.

Rows are read with ``.values(...).iterator(chunk_size=...)`` (a server-side
cursor on PostgreSQL) and written as they arrive into a
``StreamingHttpResponse``: the file is never held whole in memory, however
many rows it has.

Values are written the same way in both formats: datetimes in UTC ISO 8601
with microseconds (the audit chain hashes ``occurred_at`` in that form, so an
exported JSON Lines file can be re-verified), UUIDs and decimals as strings.
In CSV, JSON columns are JSON text, and text starting with ``= + - @`` (or a
tab or carriage return) is prefixed with ``'`` so a spreadsheet never runs it
as a formula. JSON Lines keeps every value as it is; it is the format to
verify the audit chain from.

This module is generic (``registry`` and ``executions`` both export through it).
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from django.db import transaction
from django.http import StreamingHttpResponse
from django.utils import timezone

FORMATS = {
    "csv": ("text/csv; charset=utf-8", "csv"),
    "jsonl": ("application/x-ndjson; charset=utf-8", "jsonl"),
}
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
# Rows are buffered into pieces of about this size before being handed to the server.
PIECE_BYTES = 64 * 1024


@dataclass(frozen=True)
class Column:
    """One exported column: its name in the file and the ``values()`` path it reads."""

    name: str
    source: str
    is_json: bool = False


def plain(value):
    """A value as JSON would carry it (used by both formats)."""
    if isinstance(value, dt.datetime):
        if timezone.is_naive(value):
            value = timezone.make_aware(value, dt.UTC)
        return value.astimezone(dt.UTC).isoformat(timespec="microseconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, uuid.UUID | decimal.Decimal):
        return str(value)
    return value


def _json_default(value):
    converted = plain(value)
    if converted is value:
        return str(value)
    return converted


def to_json(value, *, sort_keys: bool = True) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=sort_keys, default=_json_default)


def csv_cell(value, *, is_json: bool = False) -> str:
    """One CSV cell: JSON columns as JSON text, text guarded against formula injection."""
    if value is None:
        return ""
    if is_json:
        text = to_json(value)
    elif isinstance(value, bool):
        return "true" if value else "false"
    elif isinstance(value, int | float | decimal.Decimal):
        return str(value)  # numbers are not formulas, even negative ones
    else:
        text = plain(value)
        text = text if isinstance(text, str) else str(text)
    if text.startswith(FORMULA_PREFIXES):
        return "'" + text
    return text


def iter_rows(queryset, columns: list[Column], *, chunk_size: int) -> Iterator[dict]:
    """The rows of ``queryset`` as ``{column name: value}``, read in chunks."""
    sources = [c.source for c in columns]
    # Inside a transaction the server-side cursor is not WITH HOLD, so PostgreSQL
    # streams rows at once instead of materializing the whole result first.
    with transaction.atomic():
        for row in queryset.values(*sources).iterator(chunk_size=chunk_size):
            yield {c.name: row[c.source] for c in columns}


def _pieces(lines: Iterable[str]) -> Iterator[bytes]:
    buffer: list[str] = []
    size = 0
    for line in lines:
        buffer.append(line)
        size += len(line)
        if size >= PIECE_BYTES:
            yield "".join(buffer).encode()
            buffer, size = [], 0
    if buffer:
        yield "".join(buffer).encode()


def csv_lines(rows: Iterable[dict], columns: list[Column]) -> Iterator[str]:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")

    def take() -> str:
        text = out.getvalue()
        out.seek(0)
        out.truncate()
        return text

    writer.writerow([c.name for c in columns])
    yield take()
    for row in rows:
        writer.writerow([csv_cell(row[c.name], is_json=c.is_json) for c in columns])
        yield take()


def jsonl_lines(rows: Iterable[dict], columns: list[Column]) -> Iterator[str]:
    for row in rows:
        # One object per line, keys in column order.
        yield to_json({c.name: row[c.name] for c in columns}, sort_keys=False) + "\n"


def export_filename(basename: str, fmt: str, *, now: dt.datetime | None = None) -> str:
    stamp = (now or timezone.now()).astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{basename}-{stamp}.{FORMATS[fmt][1]}"


def export_response(
    queryset,
    *,
    columns: list[Column],
    fmt: str,
    basename: str,
    chunk_size: int = 1000,
) -> StreamingHttpResponse:
    """Stream ``queryset`` as a CSV or JSON Lines attachment."""
    if fmt not in FORMATS:
        raise ValueError(f"Unknown export format {fmt!r}; use {', '.join(FORMATS)}.")
    rows = iter_rows(queryset, columns, chunk_size=chunk_size)
    lines = csv_lines(rows, columns) if fmt == "csv" else jsonl_lines(rows, columns)
    response = StreamingHttpResponse(_pieces(lines), content_type=FORMATS[fmt][0])
    response["Content-Disposition"] = f'attachment; filename="{export_filename(basename, fmt)}"'
    response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response


# The audit log's columns: the chain's content fields under their own names, the
# event's MAC, actor id and identity, plus the chain itself (sequence, prev_hash, hash), so a JSON
# Lines export can be re-verified.
AUDIT_COLUMNS = [
    Column("id", "id"),
    Column("sequence", "sequence"),
    Column("occurred_at", "occurred_at"),
    Column("actor_id", "actor_id"),
    Column("actor_ref", "actor_ref"),
    Column("actor_name", "actor_name"),
    Column("action", "action"),
    Column("target_type", "target_type"),
    Column("target_id", "target_id"),
    Column("target_repr", "target_repr"),
    Column("before", "before", is_json=True),
    Column("after", "after", is_json=True),
    Column("request_id", "request_id"),
    Column("client_address", "client_address"),
    Column("mac", "mac"),
    Column("uid", "uid"),
    Column("prev_hash", "prev_hash"),
    Column("hash", "hash"),
    Column("seal_mac", "seal_mac"),
    Column("sealed_at", "sealed_at"),
]
AUDIT_CHUNK_SIZE = 2000


def audit_export_response(queryset, fmt: str) -> StreamingHttpResponse:
    return export_response(
        queryset, columns=AUDIT_COLUMNS, fmt=fmt, basename="audit", chunk_size=AUDIT_CHUNK_SIZE
    )


# API helpers: ``?format=`` names the file format, not a DRF renderer.


def export_format(params) -> str:
    """The ``format`` query parameter (csv when absent); a 400 naming it otherwise."""
    from rest_framework.exceptions import ValidationError

    raw = params.get("format", "csv")
    if raw not in FORMATS:
        raise ValidationError({"format": [f"'{raw}' is not one of: {', '.join(FORMATS)}."]})
    return raw


class ExportNegotiationMixin:
    """Keeps DRF from reading ``?format=csv`` as a renderer name (it would answer 404).

    Errors are still rendered as JSON by the first renderer.
    """

    def perform_content_negotiation(self, request, force=False):
        return super().perform_content_negotiation(request, force=True)
