"""PostgreSQL, with the registry generation read as the connection's health check,
and prepared statements for the writes every governed call makes.

Django checks a persistent connection (``CONN_HEALTH_CHECKS``) with ``SELECT 1``
at its first use in each request, then ToolHub's token authentication reads the
registry generation (``registry/snapshot.py``): two round trips before any real
work, on every API call. Here the health check *is* that read: it proves the
connection works just as well, and the value it returns is handed to the first
``snapshot.generation()`` of the same request instead of being read again.

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

    def bound_cursor(self):
        """A cursor (Django's wrapper: query logging and execute wrappers apply) with
        server-side binding, whose repeated statements are prepared. Its statements
        use ``$1``, ``$2``… placeholders (``toolhub.rows.numbered``), not ``%s``."""
        self.close_if_health_check_failed()
        self.ensure_connection()
        with self.wrap_database_errors:
            return self._prepare_cursor(RawBindingCursor(self.connection))

    def close_if_health_check_failed(self):
        if self.connection is None or not self.health_check_enabled or self.health_check_done:
            return
        if self.connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            super().close_if_health_check_failed()
            return
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
        self.health_check_done = True

    def take_checked_generation(self):
        """The generation, when the health check is due now and reads it; else ``NOT_CHECKED``.

        Only a check run for this very call counts: a value a check read for an
        earlier query of the request may predate the request's own writes.
        """
        self.checked_generation = NOT_CHECKED
        self.close_if_health_check_failed()
        value, self.checked_generation = self.checked_generation, NOT_CHECKED
        return value
