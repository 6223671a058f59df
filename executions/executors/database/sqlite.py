"""Running the statement on SQLite: read-only file, no ATTACH, a deadline by progress handler."""

from __future__ import annotations

import sqlite3
import time
from typing import Any
from urllib.parse import quote

from executions.executors.base import ErrorType
from executions.executors.database.options import _Options
from executions.executors.database.values import (
    _SQLITE_BUSY,
    _SQLITE_CANTOPEN,
    _SQLITE_LOCKED,
    _SQLITE_NOTADB,
    _SQLITE_READONLY,
    _Failure,
    _no_rows_output,
    _rows_output,
)


def run_sqlite(opts: _Options, cancellation=None) -> dict[str, Any]:
    """Run the tool's statement; a cancelled call's statement is interrupted like one past
    its deadline (the progress handler)."""
    mode = "ro" if opts.read_only else "rw"  # rw never creates a missing file
    uri = f"file:{quote(opts.target)}?mode={mode}"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=opts.timeout, isolation_level=None)
    except sqlite3.Error as exc:
        raise _Failure(
            ErrorType.CONNECTION,
            f"could not open the SQLite database: {exc}",
            retryable=True,
        ) from None
    deadline = _Deadline(time.monotonic() + opts.timeout, cancellation)
    try:
        conn.set_progress_handler(deadline.progress, 1000)
        if opts.read_only:
            conn.execute("PRAGMA query_only = ON")
        if opts.read_only or not opts.trusted:
            # ATTACH opens (or creates) any file the worker may write, outside
            # TOOLHUB_SQLITE_DIRS: a tool's own database stays the one it names.
            conn.set_authorizer(_deny_attach)
        conn.execute("BEGIN")
        cursor = conn.execute(opts.compiled.sql, opts.params)
        if cursor.description is None:
            output = _no_rows_output(cursor.rowcount)
        else:
            columns = [column[0] for column in cursor.description]
            output = _rows_output(columns, cursor.fetchmany(opts.max_rows + 1), opts.max_rows)
        cursor.close()
        conn.execute("ROLLBACK" if opts.read_only else "COMMIT")
        return output
    except sqlite3.Error as exc:
        raise _sqlite_failure(exc, opts, deadline.passed) from None
    finally:
        conn.close()  # an open transaction is rolled back


class _Deadline:
    """SQLite's progress handler: interrupts the running statement once the deadline passed."""

    def __init__(self, at: float, cancellation=None) -> None:
        self.at = at
        self.passed = False
        self.cancellation = cancellation

    def progress(self) -> int:
        if self.cancellation is not None and self.cancellation.is_set:
            return 1
        if time.monotonic() > self.at:
            self.passed = True
            return 1  # non-zero interrupts the running statement
        return 0


def _sqlite_failure(exc: sqlite3.Error, opts: _Options, timed_out: bool) -> _Failure:
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if timed_out:
        return _Failure(ErrorType.TIMEOUT, f"the statement did not finish within {opts.timeout:g}s")
    if code == _SQLITE_READONLY and opts.read_only:
        return _Failure(ErrorType.READ_ONLY, f"tool is read-only: {exc}")
    if code in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return _Failure(ErrorType.TIMEOUT, f"the database is locked: {exc}", True)
    if code in (_SQLITE_CANTOPEN, _SQLITE_NOTADB):
        return _Failure(ErrorType.CONNECTION, f"could not open the SQLite database: {exc}", True)
    return _Failure(ErrorType.TOOL, str(exc))


def _deny_attach(action: int, *_args: Any) -> int:
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK
