"""Database executor: one parameterised SQL statement against PostgreSQL or SQLite.

Configs (``call.configs``, already decrypted):

- ``connection_string``: ``postgresql://…`` / ``postgres://…`` (psycopg 3) or
  ``sqlite:///relative/path.db`` / ``sqlite:////absolute/path.db`` (sqlite3), or
- ``connection_alias``: a name looked up in the ``TOOLHUB_DATABASE_ALIASES``
  setting (alias -> connection string), read at call time. Not both.

  A tool's own ``connection_string`` goes through the egress guard
  (``executions.egress``): a PostgreSQL host must be a TCP host the guard
  allows (loopback and private networks only via ``TOOLHUB_EGRESS_ALLOW``), and
  the connection is pinned to the address it checked; a SQLite file must lie
  under a directory of ``TOOLHUB_SQLITE_DIRS``. An alias is the operator's
  choice and is not limited. ToolHub's own database is refused either way.
- ``query_template`` (required): ONE statement with named placeholders, written
  ``:name`` or ``%(name)s``. Values come from ``call.inputs`` and are bound by
  the driver, never spliced into the SQL. A small tokenizer finds the
  placeholders outside string literals, quoted identifiers, dollar-quoted
  strings and comments, and leaves ``::casts`` alone; ``:name`` directly after
  a letter or digit (``arr[a:b]``) is not a placeholder. ``%%`` means one
  literal ``%`` (psycopg's convention); a lone ``%`` is a literal too.
  Statements after a ``;`` are refused (config_error).
- ``read_only`` (default true): only ``false`` / ``"false"`` / ``0`` (also
  ``"0"``, ``"no"``, ``"off"``) allow writes. PostgreSQL runs the statement in
  ``BEGIN READ ONLY`` and rolls back; SQLite opens the file with
  ``mode=ro`` and ``PRAGMA query_only`` (which also covers TEMP tables) and
  denies ATTACH. With writes allowed the transaction is committed.
- ``timeout_seconds`` (default ``call.timeout_seconds``): PostgreSQL
  ``SET LOCAL statement_timeout``; SQLite a progress handler that interrupts
  the statement after the deadline.
- ``max_rows`` (default 1000): at most this many rows are returned; the
  output says ``truncated`` when there were more.

``CONFIGS`` declares these keys and their values once: the executor reads them
through it, and the registry checks a config against it when it is saved
(there ``read_only`` must be a boolean, 0/1 or one of the words above, and a
``query_template`` must compile).

Output: ``{"columns": [...], "rows": [[...]], "row_count": n, "truncated": bool}``
with values made JSON-safe by :mod:`executions.jsonsafe` (``Decimal`` ->
``str`` so no precision is lost, dates/times -> ISO 8601, ``UUID`` -> ``str``,
bytes -> base64, intervals -> seconds). A statement that returns no rows gives
``row_count`` = the driver's row count (0 when the driver does not know).

Input values that are lists or dicts are bound as JSON: psycopg ``Jsonb`` on
PostgreSQL (use ``jsonb_array_elements_text(:ids)`` rather than ``= ANY``),
a JSON text on SQLite (use ``json_each(:ids)``).

Errors: a write on a read-only tool -> ``read_only_violation``; the
statement timeout -> ``timeout`` (not retryable: the same statement would
run as long again; a locked SQLite file is retryable); cannot connect ->
``connection_error`` (retryable); any other SQL error -> ``tool_error`` with
the driver's message. Nothing is redacted here: the runner removes the call's
secrets, the connection string and its password (``lent_secrets``, and
``secrets_used`` on the result) from the output and every message, and the
connection's login name from messages (``hidden_in_errors``).

A connection is opened per call and always closed. Pooling (psycopg_pool per
connection string) is a later improvement.

The package, one concept a module: ``values`` (constants, the failure, row output),
``templates`` (compiling a query template), ``configs`` (the keys), ``guard`` (where
a tool's own connection may go), ``secrets``, ``options`` (one call's options),
``postgresql``, ``sqlite`` and ``executor``.
"""

from __future__ import annotations

from executions.executors.database.configs import CONFIGS, connection_target, parse_read_only
from executions.executors.database.executor import DatabaseExecutor
from executions.executors.database.postgresql import SUPERUSER_SETTING
from executions.executors.database.secrets import (
    connection_secrets,
    connection_user,
    lent_secrets,
)
from executions.executors.database.templates import CompiledQuery, TemplateError, compile_query
from executions.executors.database.values import (
    ALIASES_SETTING,
    DEFAULT_MAX_ROWS,
    POSTGRESQL,
    SQLITE,
    SQLITE_DIRS_SETTING,
)

__all__ = [
    "ALIASES_SETTING",
    "CONFIGS",
    "DEFAULT_MAX_ROWS",
    "POSTGRESQL",
    "SQLITE",
    "SQLITE_DIRS_SETTING",
    "SUPERUSER_SETTING",
    "CompiledQuery",
    "DatabaseExecutor",
    "TemplateError",
    "compile_query",
    "connection_secrets",
    "connection_target",
    "connection_user",
    "lent_secrets",
    "parse_read_only",
]
