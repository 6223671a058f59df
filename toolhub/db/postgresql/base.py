"""PostgreSQL, with the registry generation read as the connection's health check.

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
"""

from __future__ import annotations

import psycopg
from django.db.backends.postgresql import base

from registry.snapshot import GENERATION_SQL, NOT_CHECKED


class DatabaseWrapper(base.DatabaseWrapper):
    checked_generation = NOT_CHECKED

    def close_if_health_check_failed(self):
        if self.connection is None or not self.health_check_enabled or self.health_check_done:
            return
        if self.connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            super().close_if_health_check_failed()
            return
        try:
            with self.connection.cursor() as cursor:
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
