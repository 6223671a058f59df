"""Running the statement on PostgreSQL: who it connects as, read-only transaction, statement timeout."""

from __future__ import annotations

import math
import uuid
from typing import Any

import psycopg
from django.conf import settings
from psycopg import errors as pg_errors

from executions.executors.base import ErrorType
from executions.executors.database.options import _Options
from executions.executors.database.values import (
    _CURSOR_KEYWORDS,
    _Failure,
    _no_rows_output,
    _rows_output,
)

# --------------------------------------------------------------------------- who it connects as

# Roles whose members read or write the server's files or run programs on it, from
# SQL: read_only does not stop that (pg_read_file, COPY … TO PROGRAM).
_SERVER_POWERS = ("pg_read_server_files", "pg_write_server_files", "pg_execute_server_program")
SUPERUSER_SETTING = "TOOLHUB_DATABASE_ALLOW_SUPERUSER"


def _refuse_server_powers(conn: psycopg.Connection) -> None:
    """A tool's own connection string may not log in as a superuser, or as a role that
    reads the server's files or runs programs there: a query template (or whoever
    manages the tool) would reach the database server's machine. Operators' aliases
    are theirs to choose; ``TOOLHUB_DATABASE_ALLOW_SUPERUSER`` lifts this."""
    if getattr(settings, SUPERUSER_SETTING, False):
        return
    user = conn.info.user
    if conn.info.parameter_status("is_superuser") == "on":
        raise _Failure(
            ErrorType.CONFIG,
            f"the connection logs in as {user!r}, a PostgreSQL superuser: give the tool a "
            "role with only the rights it needs (superusers read the server's files and run "
            f"programs whatever read_only says), or set {SUPERUSER_SETTING}",
        )
    # Any role the login can become (SET ROLE, through membership at any depth) that
    # is a superuser, may create roles (and so grant itself the rest), or holds one
    # of the server powers.
    row = conn.execute(
        "SELECT array_agg(r.rolname ORDER BY r.rolname) FROM pg_roles r "
        "WHERE pg_has_role(current_user, r.oid, 'MEMBER') "
        "AND (r.rolsuper OR r.rolcreaterole OR r.rolname = ANY(%s::text[]))",
        [list(_SERVER_POWERS)],
    ).fetchone()
    conn.rollback()
    if row and row[0]:
        raise _Failure(
            ErrorType.CONFIG,
            f"the connection logs in as {user!r}, which is or can become "
            f"{', '.join(row[0])} (a superuser, a role that creates roles, or one with server "
            "file or program rights): give the tool a role without them, or set "
            f"{SUPERUSER_SETTING}",
        )


def run_postgresql(opts: _Options, cancellation=None) -> dict[str, Any]:
    """Run the tool's statement; cancelling ``cancellation`` cancels it on the server
    (PostgreSQL's cancel request, as ``pg_cancel_backend`` does)."""
    try:
        conn = psycopg.connect(
            opts.target,
            autocommit=False,
            prepare_threshold=None,
            connect_timeout=max(2, math.ceil(opts.timeout)),
            application_name="toolhub",
            **opts.pinned,
        )
    except psycopg.ProgrammingError as exc:  # the conninfo itself is malformed
        raise _Failure(ErrorType.CONFIG, f"invalid connection string: {exc}") from None
    except psycopg.Error as exc:
        raise _Failure(
            ErrorType.CONNECTION, f"could not connect to the database: {exc}", retryable=True
        ) from None
    # psycopg's own cursors, also when traces are on (toolhub/tracing.py): a tool's SQL
    # spans would keep PostgreSQL's error messages, which quote the caller's values.
    conn.cursor_factory = psycopg.Cursor
    forget = cancellation.on_cancel(conn.cancel_safe) if cancellation is not None else None
    try:
        if not opts.trusted:
            _refuse_server_powers(conn)
        return _postgresql_statement(conn, opts)
    except pg_errors.ReadOnlySqlTransaction as exc:
        raise _Failure(ErrorType.READ_ONLY, f"tool is read-only: {_pg_message(exc)}") from None
    except pg_errors.QueryCanceled as exc:
        raise _Failure(
            ErrorType.TIMEOUT,
            f"the statement did not finish within {opts.timeout:g}s: {_pg_message(exc)}",
        ) from None
    except psycopg.OperationalError as exc:
        if conn.closed or conn.broken:
            raise _Failure(
                ErrorType.CONNECTION,
                f"lost the database connection: {_pg_message(exc)}",
                retryable=True,
            ) from None
        raise _Failure(ErrorType.TOOL, _pg_message(exc)) from None
    except psycopg.Error as exc:
        raise _Failure(ErrorType.TOOL, _pg_message(exc)) from None
    finally:
        if forget is not None:
            forget()
        conn.close()  # rolls back whatever is still open


def _postgresql_statement(conn: psycopg.Connection, opts: _Options) -> dict[str, Any]:
    conn.read_only = opts.read_only  # psycopg then opens the transaction with BEGIN READ ONLY
    timeout_ms = max(1, math.ceil(opts.timeout * 1000))
    with conn.cursor() as setup:
        setup.execute(f"SET LOCAL statement_timeout = {int(timeout_ms)}")
    if opts.read_only and opts.compiled.first_keyword in _CURSOR_KEYWORDS:
        # A server-side cursor: only max_rows + 1 rows are ever fetched.
        cursor = conn.cursor(name=f"toolhub_{uuid.uuid4().hex}")
    else:
        cursor = conn.cursor()
    cursor.execute(opts.compiled.sql, opts.params)
    if cursor.description is None:
        output = _no_rows_output(cursor.rowcount)
    else:
        columns = [column.name for column in cursor.description]
        output = _rows_output(columns, cursor.fetchmany(opts.max_rows + 1), opts.max_rows)
    if opts.read_only:
        conn.rollback()
    else:
        conn.commit()
    return output


# ------------------------------------------------------------------ SQLite


def _pg_message(exc: psycopg.Error) -> str:
    text = str(exc).strip()
    sqlstate = getattr(exc, "sqlstate", None)
    return f"{text} (SQLSTATE {sqlstate})" if sqlstate else text
