"""ToolHub's PostgreSQL backend, for the test database: a flush that deletes rows.

After each ``transaction=True`` test, pytest-django flushes every table (Django's
``flush``). PostgreSQL's ``TRUNCATE`` gives each table and index a new file: about
0.2 s for ToolHub's tables on an idle machine, several times that on a busy one,
where deleting the few rows a test wrote takes milliseconds. The result is the same
(empty tables, sequences not reset), and every trigger fires as for a ``TRUNCATE``:
the registry generation moves, so no process keeps a previous test's registry.

The audit events and finished executions refuse ``DELETE`` except through retention
(``toolhub.retention``, by the tables' owner, which the test connection is); the
retention checkpoints and verification runs have no such path, so those tables are
truncated, by their owner, when a test wrote to them (few do).

At the end of the run the test database is dropped even if a session still holds it.
"""

from __future__ import annotations

from django.db.backends.postgresql.creation import DatabaseCreation as _Creation

from toolhub.db.postgresql import base

# Tables whose rows nobody may delete: emptied by their owner's TRUNCATE (the
# truncate guard lets the owner through), and only when a test wrote to them.
APPEND_ONLY = (
    "registry_auditcheckpoint",
    "registry_verificationrun",
    "registry_verificationfinding",
)


class DatabaseOperations(base.DatabaseOperations):
    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or not tables:
            return super().sql_flush(
                style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
            )
        deleted = [table for table in tables if table not in APPEND_ONLY]
        truncated = [table for table in tables if table in APPEND_ONLY]
        statements = ["SET LOCAL toolhub.retention = 'on'"]
        # Foreign keys are deferred (Django creates them DEFERRABLE INITIALLY DEFERRED):
        # the order of the deletes does not matter, the tables are all empty at commit.
        # (The names are Django's own table names, quoted.)
        statements += [f"DELETE FROM {self.quote_name(table)}" for table in deleted]  # noqa: S608
        if truncated:
            names = ", ".join(self.quote_name(table) for table in truncated)
            written = " OR ".join(
                f"EXISTS (SELECT 1 FROM {self.quote_name(table)})"  # noqa: S608
                for table in truncated
            )
            statements.append(
                f"DO $$ BEGIN IF {written} THEN TRUNCATE {names} CASCADE; END IF; END $$"
            )
        return statements


class DatabaseCreation(_Creation):
    def _destroy_test_db(self, test_database_name, verbosity):
        """Drop the test database even while a process the tests started, or a pool of this
        one, still holds a session on it (PostgreSQL 13+ ends those sessions): a test
        database is never left behind on the machine."""
        with self._nodb_cursor() as cursor:
            name = self.connection.ops.quote_name(test_database_name)
            cursor.execute(f"DROP DATABASE {name} WITH (FORCE)")


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
    creation_class = DatabaseCreation
