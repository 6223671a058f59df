"""The database executor's constants and the failure it raises inside a call."""

from __future__ import annotations

import re
from typing import Any

from executions.jsonsafe import json_safe

POSTGRESQL = "postgresql"
SQLITE = "sqlite"

DEFAULT_MAX_ROWS = 1000
ALIASES_SETTING = "TOOLHUB_DATABASE_ALIASES"
SQLITE_DIRS_SETTING = "TOOLHUB_SQLITE_DIRS"

_FALSE_WORDS = ("false", "0", "no", "off")
_TRUE_WORDS = ("true", "1", "yes", "on")
# Statements a read-only PostgreSQL call may run through a server-side cursor,
# so that only max_rows + 1 rows ever leave the server.
_CURSOR_KEYWORDS = {"SELECT", "VALUES", "TABLE"}

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PYFORMAT = re.compile(r"%\(([A-Za-z_][A-Za-z0-9_]*)\)s")
_DOLLAR_TAG = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$")

# SQLite primary result codes (extended codes keep them in the low byte).
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
_SQLITE_READONLY = 8
_SQLITE_CANTOPEN = 14
_SQLITE_NOTADB = 26


class _Failure(Exception):
    """Internal: stop and report ``error_type``/``message``."""

    def __init__(self, error_type: str, message: str, retryable: bool = False):
        super().__init__(message)
        self.error_type = error_type
        self.message = message
        self.retryable = retryable


def _rows_output(columns: list[str], rows: list[Any], max_rows: int) -> dict[str, Any]:
    truncated = len(rows) > max_rows
    kept = [json_safe(list(row)) for row in rows[:max_rows]]
    return {"columns": columns, "rows": kept, "row_count": len(kept), "truncated": truncated}


def _no_rows_output(rowcount: int | None) -> dict[str, Any]:
    count = rowcount if isinstance(rowcount, int) and rowcount >= 0 else 0
    return {"columns": [], "rows": [], "row_count": count, "truncated": False}
