"""PostgreSQL, with the registry generation read as the connection's health check,
and prepared statements for the writes every governed call makes.

Django checks a persistent connection (``CONN_HEALTH_CHECKS``) with ``SELECT 1``
at its first use in each request, then ToolHub's token authentication reads the
registry generation (``registry/snapshot.py``): two round trips before any real
work, on every API call. Here the health check *is* that read: it proves the
connection works just as well, and the value it returns is handed to the first
``snapshot.generation()`` of the same request instead of being read again.

With the connection pool (``toolhub.db.pool``, decision 0008) every request borrows
its connection, and every MCP step and the end of a call borrow again: a lent
connection whose socket has something to read (its server ended it, or spoke
unasked) is checked by the generation read and dropped if that fails, another
lent; a quiet one is used as it is, with no round trip (the pool's own check, an
empty query, is off). The generation is then read when the request needs it.

The value is used only when the check runs for that very read (the request's
first database use): a check that ran for an earlier query may predate the
request's own writes, so its value is dropped and the generation read as
usual. Inside a transaction, or before the generation table exists
(``migrate``), the check is Django's ``SELECT 1``.

``bound_cursor()`` is a cursor with server-side binding: its parameters travel
apart from the statement, and a statement it runs ``TOOLHUB_DB_PREPARE_THRESHOLD``
times on a connection is prepared there, so PostgreSQL parses and plans it once
per connection instead of on every call. ``toolhub/rows.py`` uses it for the
fixed statements of the call path (the Execution row and its audit events, the
final UPDATE) and this module for the generation read: that took about a third
of PostgreSQL's CPU per governed call and the Python that quoted 54 values into
the text of one statement (bench/README.md). Every other query keeps Django's
client-side binding, which accepts any SQL the ORM writes. ``0`` turns
preparing off (a pooler in transaction mode that cannot keep them, for example).
The cursor is psycopg's public ``RawCursor`` (``$n`` placeholders), and the
threshold psycopg's public ``Connection.prepare_threshold``: no private module
is patched. Decision records: docs/decisions/0001-rowwriter.md (the bound
writes) and docs/decisions/0002-generation-health-check.md (the health check).
"""

from __future__ import annotations

import re
import select

import psycopg
from django.conf import settings
from django.db.backends.postgresql import base
from django.db.backends.postgresql.operations import DatabaseOperations as _Operations

from toolhub.db.generation import GENERATION_SQL, NOT_CHECKED


def _prepare_threshold() -> int | None:
    threshold = getattr(settings, "TOOLHUB_DB_PREPARE_THRESHOLD", 1)
    return threshold if threshold and threshold > 0 else None


_NUMBERED = re.compile(r"\$(\d+)")


class RawBindingCursor(base.CursorMixin, psycopg.RawCursor):
    """Django's psycopg cursor, on psycopg's public ``RawCursor``: server-side binding
    with PostgreSQL's own ``$n`` placeholders, sent as written (no client-side parsing
    of the text, which psycopg caches only up to 50 parameters)."""


class DatabaseOperations(_Operations):
    def last_executed_query(self, cursor, sql, params):
        # A bound_cursor() statement's text holds $n placeholders, not the values:
        # the query log (DEBUG, captured queries) shows it with the values in.
        if isinstance(cursor, RawBindingCursor):
            try:
                order = [params[int(n) - 1] for n in _NUMBERED.findall(sql)]
                text = _NUMBERED.sub("%s", sql.replace("%", "%%"))
                return self.compose_sql(text, order)
            except (psycopg.errors.DataError, IndexError, TypeError):
                return None
        return super().last_executed_query(cursor, sql, params)


class DatabaseWrapper(base.DatabaseWrapper):
    checked_generation = NOT_CHECKED
    ops_class = DatabaseOperations

    def get_new_connection(self, conn_params):
        connection = super().get_new_connection(conn_params)
        # Only server-side binding cursors prepare (psycopg's ClientCursor never
        # does), so this applies to bound_cursor() and the generation read alone.
        # OPTIONS that set prepare_threshold or server-side binding everywhere
        # are the operator's choice and stay as given.
        options = self.settings_dict["OPTIONS"]
        if "prepare_threshold" not in options and not options.get("server_side_binding"):
            connection.prepare_threshold = _prepare_threshold()
        return connection

    def create_cursor(self, name=None):
        self.checked_generation = NOT_CHECKED  # a query after the check: its value may be stale
        return super().create_cursor(name)

    def bound_cursor(self):
        """A cursor (Django's wrapper: query logging and execute wrappers apply) with
        server-side binding, whose repeated statements are prepared. Its statements
        use ``$1``, ``$2``… placeholders (``toolhub.rows.numbered``), not ``%s``."""
        self.close_if_health_check_failed()
        self.ensure_connection()
        self.checked_generation = NOT_CHECKED
        with self.wrap_database_errors:
            return self._prepare_cursor(RawBindingCursor(self.connection))

    def connect(self):
        """With a pool, a lent connection is checked before use: one that died while pooled
        (a database restart, a terminated backend) is dropped and another lent.

        The check costs no round trip when the connection is quiet: an idle connection has
        nothing to read unless its server ended it (the server's goodbye, then the end of
        the stream) or sent something unasked (a notice). Only then is it asked, by the
        generation read, and dropped if that fails (decision 0002)."""
        self.checked_generation = NOT_CHECKED  # a value an earlier borrow read is no use
        super().connect()
        if self.pool is None or self.in_atomic_block:
            return
        for _ in range(self.pool.max_size):
            if self._quiet():
                return
            self._read_generation_or_close()
            if self.connection is not None:
                return
            super().connect()  # after max_size dead ones, the pool opens a new one

    def _quiet(self) -> bool:
        """Whether the lent connection is open with nothing waiting to be read."""
        conn = self.connection
        if conn is None or conn.closed or conn.pgconn.status != psycopg.pq.ConnStatus.OK:
            return False
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            return False
        poller = select.poll()
        try:
            poller.register(conn.fileno(), select.POLLIN | select.POLLPRI)
            return not poller.poll(0)
        except (OSError, ValueError):
            return False

    def close_if_health_check_failed(self):
        if self.connection is None or not self.health_check_enabled or self.health_check_done:
            return
        if self.connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            super().close_if_health_check_failed()
            return
        self._read_generation_or_close()
        self.health_check_done = True

    def _read_generation_or_close(self):
        try:
            with psycopg.Cursor(self.connection) as cursor:
                cursor.execute(GENERATION_SQL)
                row = cursor.fetchone()
        except psycopg.errors.UndefinedTable:
            pass  # not migrated yet: the connection answered, so it works
        except psycopg.Error:
            self.close()
        else:
            self.checked_generation = row[0] if row else None

    def take_checked_generation(self):
        """The generation, when the health check is due now and reads it (or read it
        when the pool lent the connection, no query since); else ``NOT_CHECKED``.

        A value a check read before a query of the request is dropped when that query's
        cursor is made: it may predate the request's own writes.
        """
        if self.connection is None and self.pool is not None and not self.in_atomic_block:
            self.ensure_connection()  # the pool lends one, checked by this very read
        else:
            self.close_if_health_check_failed()
        value, self.checked_generation = self.checked_generation, NOT_CHECKED
        return value
