"""Database executor: one parameterised SQL statement against PostgreSQL or SQLite.

Configs (``call.configs``, already decrypted):

- ``connection_string``: ``postgresql://…`` / ``postgres://…`` (psycopg 3) or
  ``sqlite:///relative/path.db`` / ``sqlite:////absolute/path.db`` (sqlite3), or
- ``connection_alias``: a name looked up in the ``TOOLHUB_DATABASE_ALIASES``
  setting (alias -> connection string), read at call time. Not both.

  A tool's own ``connection_string`` goes through the egress guard
  (``executions/egress.py``): a PostgreSQL host must be a TCP host the guard
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
the driver's message. Every message is redacted of ``call.secret_values``,
the connection string and its password.

A connection is opened per call and always closed. Pooling (psycopg_pool per
connection string) is a later improvement.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
import socket
import sqlite3
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import psycopg
from django.conf import settings
from django.db import connections
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.json import Jsonb

from executions import egress
from executions.executors.base import ErrorType, ExecutorResult, ToolCall
from executions.executors.configs import (
    ConfigError,
    ConfigKey,
    ConfigValueError,
    ExecutorConfigs,
    got,
    positive_integer,
    positive_number,
    text,
)
from executions.jsonsafe import json_safe
from executions.redaction import redact, redact_text

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


# --------------------------------------------------------------------------- templates


class TemplateError(ValueError):
    """The query template cannot be used (unterminated literal, several statements…)."""


@dataclass(frozen=True)
class CompiledQuery:
    sql: str  # in the driver's placeholder style
    names: tuple[str, ...]  # distinct placeholder names, in order of first use
    first_keyword: str  # upper-cased first word of the statement ("" if none)


def _is_word_char(ch: str) -> bool:
    return bool(ch) and (ch.isalnum() or ch in "_$")


def _quoted_end(text: str, start: int, quote_char: str, backslash_escapes: bool) -> int:
    """Index just past the literal/identifier opened at ``start`` (doubled quotes escape)."""
    j, n = start + 1, len(text)
    while j < n:
        ch = text[j]
        if backslash_escapes and ch == "\\":
            j += 2
            continue
        if ch == quote_char:
            if j + 1 < n and text[j + 1] == quote_char:
                j += 2
                continue
            return j + 1
        j += 1
    raise TemplateError(f"unterminated {quote_char} quoted text starting at character {start + 1}")


def _block_comment_end(text: str, start: int, nested: bool) -> int:
    if not nested:  # SQLite: the first */ ends the comment
        end = text.find("*/", start + 2)
        if end == -1:
            raise TemplateError(f"unterminated /* comment starting at character {start + 1}")
        return end + 2
    depth, j, n = 0, start, len(text)
    while j < n:
        if text.startswith("/*", j):
            depth += 1
            j += 2
        elif text.startswith("*/", j):
            depth -= 1
            j += 2
            if depth == 0:
                return j
        else:
            j += 1
    raise TemplateError(f"unterminated /* comment starting at character {start + 1}")


def compile_query(template: str, dialect: str) -> CompiledQuery:
    """Rewrite ``:name`` / ``%(name)s`` placeholders into the driver's named style.

    PostgreSQL (psycopg) gets ``%(name)s`` and every literal ``%`` doubled;
    SQLite gets ``:name``. Text inside literals and comments is copied as is.
    """
    pg = dialect == POSTGRESQL
    out: list[str] = []
    names: list[str] = []
    first_keyword: str | None = None
    ended = False  # a ';' was seen: only whitespace and comments may follow
    i, n = 0, len(template)

    def literal(text: str) -> str:
        return text.replace("%", "%%") if pg else text

    def placeholder(name: str) -> str:
        if name not in names:
            names.append(name)
        return f"%({name})s" if pg else f":{name}"

    while i < n:
        ch = template[i]
        if ch.isspace():
            out.append(ch)
            i += 1
            continue
        if template.startswith("--", i):
            end = template.find("\n", i)
            end = n if end == -1 else end
            out.append(literal(template[i:end]))
            i = end
            continue
        if template.startswith("/*", i):
            end = _block_comment_end(template, i, nested=pg)
            out.append(literal(template[i:end]))
            i = end
            continue
        if ended:
            raise TemplateError(
                "query_template must hold a single SQL statement (text found after ';')"
            )
        if ch == ";":
            ended = True  # the trailing ';' is dropped (DECLARE … FOR <query> refuses it)
            i += 1
            continue
        if first_keyword is None and ch != "(":
            word = _NAME.match(template, i)
            first_keyword = word.group().upper() if word else ""

        prev = template[i - 1] if i else ""
        end = None
        if ch == "'":
            escapes = pg and prev in ("e", "E") and (i < 2 or not _is_word_char(template[i - 2]))
            end = _quoted_end(template, i, "'", escapes)
        elif ch == '"' or (ch == "`" and not pg):
            end = _quoted_end(template, i, ch, False)
        elif ch == "[" and not pg:  # SQLite [identifier]
            close = template.find("]", i + 1)
            if close == -1:
                raise TemplateError(f"unterminated [ identifier starting at character {i + 1}")
            end = close + 1
        elif ch == "$" and pg and not _is_word_char(prev):
            tag = _DOLLAR_TAG.match(template, i)
            if tag:
                close = template.find(tag.group(), tag.end())
                if close == -1:
                    raise TemplateError(
                        f"unterminated dollar-quoted string starting at character {i + 1}"
                    )
                end = close + len(tag.group())
        elif ch == ":":
            if template.startswith("::", i):  # PostgreSQL cast
                out.append("::")
                i += 2
                continue
            word = _NAME.match(template, i + 1)
            if word and not (_is_word_char(prev) or prev == ":"):
                out.append(placeholder(word.group()))
                i = word.end()
                continue
        elif ch == "%":
            match = _PYFORMAT.match(template, i)
            if match:
                out.append(placeholder(match.group(1)))
                i = match.end()
                continue
            out.append(literal("%"))
            i += 2 if template.startswith("%%", i) else 1
            continue

        if end is None:
            out.append(ch)
            i += 1
        else:
            out.append(literal(template[i:end]))
            i = end

    return CompiledQuery(
        sql="".join(out).strip(), names=tuple(names), first_keyword=first_keyword or ""
    )


# --------------------------------------------------------------------------- options


class _Failure(Exception):
    """Internal: stop and report ``error_type``/``message``."""

    def __init__(self, error_type: str, message: str, retryable: bool = False):
        super().__init__(message)
        self.error_type = error_type
        self.message = message
        self.retryable = retryable


@dataclass(frozen=True)
class _Options:
    dialect: str
    connection_string: str
    target: str  # PostgreSQL conninfo, or the SQLite file path
    compiled: CompiledQuery
    params: dict[str, Any]
    read_only: bool
    timeout: float
    max_rows: int
    pinned: Mapping[str, str] = field(default_factory=dict)  # hostaddr the guard checked
    trusted: bool = False  # an operator's alias, not a tool's own connection string


def parse_read_only(value: Any) -> bool:
    """Read-only unless explicitly false (``False``, ``0``, ``"false"``, ``"0"``, ``"no"``, ``"off"``)."""
    if value is None:
        return True
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    if isinstance(value, str):
        return value.strip().lower() not in _FALSE_WORDS
    return True


def _check_read_only(value: Any) -> None:
    """At save time: a boolean, 0 or 1, or one of the words; not a word read as true by default."""
    if isinstance(value, bool) or value in (0, 1):
        return
    if isinstance(value, str) and value.strip().lower() in _TRUE_WORDS + _FALSE_WORDS:
        return
    raise ConfigValueError(got(value))


def connection_target(connection_string: str) -> tuple[str, str]:
    """The dialect and target (conninfo or SQLite path) of a connection string.

    Raises ``ConfigValueError`` without quoting the string (it may hold a password).
    """
    scheme = connection_string.split("://", 1)[0].lower() if "://" in connection_string else ""
    if scheme in ("postgresql", "postgres"):
        return POSTGRESQL, connection_string
    if scheme == "sqlite":
        prefix = "sqlite:///"
        path = connection_string[len(prefix) :] if connection_string.startswith(prefix) else ""
        if not path:
            raise ConfigValueError(
                "a SQLite connection string looks like sqlite:///path/to/file.db"
            )
        return SQLITE, path
    raise ConfigValueError(
        "unsupported connection string: use postgresql://…, postgres://… or sqlite:///…"
    )


def _connection_string_value(value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigValueError("it is not a string")
    connection = value.strip()
    connection_target(connection)
    return connection


def _check_connection_string(value: Any) -> None:
    """At save time: a PostgreSQL connection string must parse and name one server."""
    dialect, target = connection_target(value.strip())
    if dialect == POSTGRESQL:
        try:
            info = conninfo_to_dict(target)
        except psycopg.ProgrammingError:
            raise ConfigValueError("it is not a valid PostgreSQL connection string") from None
        _check_conninfo(info)


def _no_plain_password(value: Any) -> None:
    """A plain connection string may not hold a password (readers of the tool see it)."""
    dialect, target = connection_target(value.strip())
    if dialect != POSTGRESQL:
        return
    try:
        info = conninfo_to_dict(target)
    except psycopg.ProgrammingError:
        return  # the check above names what is wrong
    if info.get("password"):
        raise ConfigValueError("it carries a password: mark the config secret")


def _check_query_template(value: Any) -> None:
    """At save time: the template must compile for PostgreSQL or SQLite (the connection
    decides which at run time) and hold a statement."""
    problem = None
    for dialect in (POSTGRESQL, SQLITE):
        try:
            compiled = compile_query(value, dialect)
        except TemplateError as exc:
            problem = problem or str(exc)
            continue
        if compiled.sql:
            return
        problem = problem or "it holds no SQL statement"
    raise ConfigValueError(problem or "it holds no SQL statement")


CONFIGS = ExecutorConfigs(
    "database",
    [
        ConfigKey(
            "connection_string",
            "a postgresql://…, postgres://… or sqlite:///path connection string",
            _connection_string_value,
            check=_check_connection_string,
            plain_check=_no_plain_password,
            destination=True,
        ),
        ConfigKey(
            "connection_alias",
            f"a connection name from {ALIASES_SETTING}",
            text,
            destination=True,
        ),
        ConfigKey(
            "query_template",
            "one SQL statement with :name or %(name)s placeholders",
            text,
            check=_check_query_template,
        ),
        ConfigKey(
            "read_only",
            "true or false (also 1/0, yes/no, on/off)",
            parse_read_only,
            True,
            check=_check_read_only,
        ),
        ConfigKey("timeout_seconds", "a positive number of seconds", positive_number),
        ConfigKey("max_rows", "a positive whole number", positive_integer, DEFAULT_MAX_ROWS),
    ],
)


def _config(configs: Mapping[str, Any], name: str) -> Any:
    try:
        return CONFIGS.read(configs, name)
    except ConfigError as exc:
        raise _Failure(ErrorType.CONFIG, str(exc)) from None


def _connection_string(configs: Mapping[str, Any]) -> tuple[str, bool]:
    """The connection string, and whether it comes from an operator's alias (trusted)."""
    direct = _config(configs, "connection_string")
    alias = _config(configs, "connection_alias")
    if direct and alias:
        raise _Failure(ErrorType.CONFIG, "set connection_string or connection_alias, not both")
    if alias:
        aliases = getattr(settings, ALIASES_SETTING, None) or {}
        if alias not in aliases:
            raise _Failure(
                ErrorType.CONFIG, f"unknown connection_alias {alias!r} (see {ALIASES_SETTING})"
            )
        direct = aliases[alias]
    if not direct or not isinstance(direct, str):
        raise _Failure(ErrorType.CONFIG, "the tool needs a connection_string or connection_alias")
    return direct.strip(), bool(alias)


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


# --------------------------------------------------------------------------- where it may connect

# conninfo keys that would let a tool's connection string read files or settings of
# the worker's machine instead of naming a server.
_REFUSED_CONNINFO_KEYS = ("service", "servicefile", "passfile")


def _guard_postgresql(target: str) -> dict[str, str]:
    """Apply the egress guard to a tool's PostgreSQL connection string.

    Returns ``{"hostaddr": …}``: the address that was checked, so the connection is
    pinned to it (no second DNS lookup). A tool's own connection string must name
    one TCP host: no Unix socket, no default host from the worker's environment.
    """
    info = _conninfo(target)
    try:
        _check_conninfo(info)
    except ConfigValueError as exc:
        raise _Failure(ErrorType.CONFIG, str(exc)) from None
    host = str(info.get("host") or "").strip()
    hostaddr = str(info.get("hostaddr") or "").strip()
    port_text = str(info.get("port") or "5432").strip()
    if not host and not hostaddr:
        raise _Failure(
            ErrorType.EGRESS_DENIED,
            "the connection string names no host (a local socket or the worker's default "
            "is not allowed): give host and port",
        )
    if host.startswith(("/", "@")):
        raise _Failure(
            ErrorType.EGRESS_DENIED, f"a Unix socket ({host}) is not allowed: give a TCP host"
        )
    try:
        port = int(port_text)
    except ValueError:
        raise _Failure(ErrorType.CONFIG, f"invalid port {port_text!r}") from None
    try:
        destination = egress.check_host(hostaddr or host, port)
    except egress.EgressDenied as exc:
        raise _Failure(ErrorType.EGRESS_DENIED, str(exc)) from None
    except egress.HostResolutionError as exc:
        raise _Failure(ErrorType.CONNECTION, str(exc), retryable=True) from None
    _refuse_own_postgresql(destination.addresses, port, _dbname(info))
    return {"hostaddr": destination.address}


def _check_conninfo(info: Mapping[str, Any]) -> None:
    for key in _REFUSED_CONNINFO_KEYS:
        if info.get(key):
            raise ConfigValueError(f"the connection string may not set {key!r}")
    parts = (info.get("host"), info.get("hostaddr"), info.get("port"))
    if any("," in str(part or "") for part in parts):
        raise ConfigValueError("the connection string must name a single host")


def _conninfo(target: str) -> dict[str, Any]:
    try:
        return conninfo_to_dict(target)
    except psycopg.ProgrammingError as exc:
        raise _Failure(ErrorType.CONFIG, f"invalid connection string: {exc}") from None


def _dbname(info: Mapping[str, Any]) -> str:
    """The database a connection opens: without ``dbname``, libpq takes the user's name."""
    return str(info.get("dbname") or info.get("user") or "")


def _refuse_own_postgresql_alias(target: str) -> None:
    """An operator's alias is not held to the egress guard, but it still may not be
    ToolHub's own database (its sessions, users and audit log)."""
    info = _conninfo(target)
    try:
        port = int(str(info.get("port") or "5432").split(",")[0].strip())
    except ValueError:
        raise _Failure(ErrorType.CONFIG, "invalid port in the connection string") from None
    hosts = [h.strip() for h in str(info.get("hostaddr") or info.get("host") or "").split(",")]
    addresses: set[str] = set()
    for host in hosts:
        if not host or host.startswith(("/", "@")):
            addresses.add("127.0.0.1")  # a local socket: this machine
            continue
        try:
            addresses.update(
                i[4][0] for i in socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
            )
        except OSError:
            continue  # the connection itself will fail and say so
    _refuse_own_postgresql(tuple(addresses), port, _dbname(info))


def _own_databases() -> list[Mapping[str, Any]]:
    """ToolHub's databases: as configured, and as connected (a test run renames them)."""
    configured = list((getattr(settings, "DATABASES", None) or {}).values())
    return configured + [connections[alias].settings_dict for alias in connections]


def _refuse_own_postgresql(addresses: tuple[str, ...], port: int, dbname: str) -> None:
    """ToolHub's own database is never a tool's target, even where egress is allowed."""
    for own in _own_databases():
        if "postgresql" not in own.get("ENGINE", "") or not dbname:
            continue
        if dbname != own.get("NAME") or port != int(own.get("PORT") or 5432):
            continue
        own_host = str(own.get("HOST") or "")
        same_host = (
            not own_host
            or own_host.startswith("/")
            or own_host in addresses
            or any(ipaddress.ip_address(a).is_loopback for a in addresses)
            or _resolves_to(own_host, port, addresses)
        )
        if same_host:
            raise _Failure(ErrorType.EGRESS_DENIED, "a tool may not connect to ToolHub's database")


def _resolves_to(host: str, port: int, addresses: tuple[str, ...]) -> bool:
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except OSError:
        return False
    return any(info[4][0] in addresses for info in infos)


def _sqlite_dirs() -> list[Path]:
    return [Path(d).resolve() for d in getattr(settings, SQLITE_DIRS_SETTING, None) or [] if d]


def _guard_sqlite(path: str, trusted: bool) -> None:
    """A tool's own SQLite file must lie under ``TOOLHUB_SQLITE_DIRS``; ToolHub's
    database files are refused whatever configured them."""
    try:
        resolved = Path(path).resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        raise _Failure(ErrorType.CONFIG, f"invalid SQLite path: {exc}") from None
    for own in _own_databases():
        if "sqlite" not in own.get("ENGINE", "") or not own.get("NAME"):
            continue
        own_path = str(own["NAME"])
        if own_path == ":memory:" or own_path.startswith("file:"):
            continue
        if resolved == Path(own_path).resolve():
            raise _Failure(ErrorType.EGRESS_DENIED, "a tool may not open ToolHub's database")
    if trusted:
        return
    allowed = _sqlite_dirs()
    if not any(resolved.is_relative_to(directory) for directory in allowed):
        where = ", ".join(str(d) for d in allowed) or "none is set"
        raise _Failure(
            ErrorType.EGRESS_DENIED,
            f"SQLite files may only be opened under the directories in {SQLITE_DIRS_SETTING} "
            f"({where})",
        )


def connection_secrets(connection_string: str) -> list[str]:
    """The connection string and its password (raw and percent-decoded), for redaction."""
    secrets = [connection_string]
    try:
        password = urlsplit(connection_string).password
    except ValueError:
        password = None
    if password:
        secrets += [password, unquote(password)]
    return secrets


def lent_secrets(configs: Mapping[str, Any]) -> list[str]:
    """The connection string the call uses (an operator's alias resolved) and its
    password, for the runner's redaction; none when the configs name no usable one."""
    try:
        connection_string, _ = _connection_string(configs or {})
    except _Failure:
        return []
    secrets = connection_secrets(connection_string)
    try:  # the key=value form's password too (connection_secrets reads URLs)
        password = conninfo_to_dict(connection_string).get("password")
    except psycopg.Error:
        password = None
    return [*secrets, password] if password else secrets


def connection_user(connection_string: str) -> str | None:
    """The user a connection string names (URL or key=value form), if any.

    Kept out of error messages (the server's "role … does not exist" names it),
    not out of outputs: a query may rightly return its own user's name.
    """
    try:
        return conninfo_to_dict(connection_string).get("user") or None
    except Exception:
        return None


def _dialect_and_target(connection_string: str) -> tuple[str, str]:
    try:
        return connection_target(connection_string)
    except ConfigValueError as exc:
        raise _Failure(ErrorType.CONFIG, str(exc)) from None


def _bind_value(value: Any, dialect: str) -> Any:
    if isinstance(value, dict | list | tuple):
        if dialect == POSTGRESQL:
            return Jsonb(value)
        return json.dumps(value)
    return value


def _options(call: ToolCall, connection_string: str, trusted: bool = False) -> _Options:
    configs = call.configs
    dialect, target = _dialect_and_target(connection_string)
    pinned: dict[str, str] = {}
    if dialect == SQLITE:
        _guard_sqlite(target, trusted)
    elif not trusted:
        pinned = _guard_postgresql(target)
    else:
        _refuse_own_postgresql_alias(target)
    template = _config(configs, "query_template")
    if not template:
        raise _Failure(ErrorType.CONFIG, "the tool has no query_template")
    try:
        compiled = compile_query(template, dialect)
    except TemplateError as exc:
        raise _Failure(ErrorType.CONFIG, f"query_template: {exc}") from None
    if not compiled.sql:
        raise _Failure(ErrorType.CONFIG, "query_template holds no SQL statement")
    missing = [name for name in compiled.names if name not in call.inputs]
    if missing:
        raise _Failure(
            ErrorType.INPUT,
            "no input for query placeholder(s): " + ", ".join(missing),
        )
    params = {name: _bind_value(call.inputs[name], dialect) for name in compiled.names}
    timeout = _config(configs, "timeout_seconds")
    if timeout is None:
        try:
            timeout = positive_number(call.timeout_seconds)
        except ConfigValueError:
            raise _Failure(
                ErrorType.CONFIG, "the call's timeout must be a positive number of seconds"
            ) from None
    max_rows = _config(configs, "max_rows")
    return _Options(
        dialect=dialect,
        connection_string=connection_string,
        target=target,
        compiled=compiled,
        params=params,
        read_only=_config(configs, "read_only"),
        timeout=timeout,
        max_rows=max_rows,
        pinned=pinned,
        trusted=trusted,
    )


# --------------------------------------------------------------------------- executor


def _rows_output(columns: list[str], rows: list[Any], max_rows: int) -> dict[str, Any]:
    truncated = len(rows) > max_rows
    kept = [json_safe(list(row)) for row in rows[:max_rows]]
    return {"columns": columns, "rows": kept, "row_count": len(kept), "truncated": truncated}


def _no_rows_output(rowcount: int | None) -> dict[str, Any]:
    count = rowcount if isinstance(rowcount, int) and rowcount >= 0 else 0
    return {"columns": [], "rows": [], "row_count": count, "truncated": False}


class DatabaseExecutor:
    kind = "database"

    def execute(self, call: ToolCall) -> ExecutorResult:
        started = time.perf_counter()
        secrets: list[str] = [s for s in call.secret_values if s]
        hidden_in_errors: list[str] = []
        metadata: dict[str, Any] = {}
        try:
            connection_string, trusted = _connection_string(call.configs)
            secrets += connection_secrets(connection_string)
            hidden_in_errors = [u for u in [connection_user(connection_string)] if u]
            opts = _options(call, connection_string, trusted)
            metadata = {
                "engine": opts.dialect,
                "read_only": opts.read_only,
                "max_rows": opts.max_rows,
            }
            if opts.dialect == POSTGRESQL:
                output = self._run_postgresql(opts)
            else:
                output = self._run_sqlite(opts)
        except _Failure as failure:
            return ExecutorResult(
                ok=False,
                error_type=failure.error_type,
                error_message=redact_text(failure.message, secrets + hidden_in_errors),
                retryable=failure.retryable,
                metadata=metadata,
                latency_ms=(time.perf_counter() - started) * 1000,
            )
        except Exception as exc:  # an executor never raises: report the unexpected
            return ExecutorResult(
                ok=False,
                error_type=ErrorType.TOOL,
                error_message=redact_text(
                    f"{type(exc).__name__}: {exc}", secrets + hidden_in_errors
                ),
                metadata=metadata,
                latency_ms=(time.perf_counter() - started) * 1000,
            )
        return ExecutorResult(
            ok=True,
            output=redact(output, secrets),
            metadata=metadata,
            latency_ms=(time.perf_counter() - started) * 1000,
        )

    # ------------------------------------------------------------------ PostgreSQL

    def _run_postgresql(self, opts: _Options) -> dict[str, Any]:
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
        try:
            if not opts.trusted:
                _refuse_server_powers(conn)
            return self._postgresql_statement(conn, opts)
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
            conn.close()  # rolls back whatever is still open

    def _postgresql_statement(self, conn: psycopg.Connection, opts: _Options) -> dict[str, Any]:
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

    def _run_sqlite(self, opts: _Options) -> dict[str, Any]:
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
        timed_out = False
        deadline = time.monotonic() + opts.timeout

        def progress() -> int:
            nonlocal timed_out
            if time.monotonic() > deadline:
                timed_out = True
                return 1  # non-zero interrupts the running statement
            return 0

        try:
            conn.set_progress_handler(progress, 1000)
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
            code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
            if timed_out:
                raise _Failure(
                    ErrorType.TIMEOUT, f"the statement did not finish within {opts.timeout:g}s"
                ) from None
            if code == _SQLITE_READONLY and opts.read_only:
                raise _Failure(ErrorType.READ_ONLY, f"tool is read-only: {exc}") from None
            if code in (_SQLITE_BUSY, _SQLITE_LOCKED):
                raise _Failure(ErrorType.TIMEOUT, f"the database is locked: {exc}", True) from None
            if code in (_SQLITE_CANTOPEN, _SQLITE_NOTADB):
                raise _Failure(
                    ErrorType.CONNECTION, f"could not open the SQLite database: {exc}", True
                ) from None
            raise _Failure(ErrorType.TOOL, str(exc)) from None
        finally:
            conn.close()  # an open transaction is rolled back


def _deny_attach(action: int, *_args: Any) -> int:
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _pg_message(exc: psycopg.Error) -> str:
    text = str(exc).strip()
    sqlstate = getattr(exc, "sqlstate", None)
    return f"{text} (SQLSTATE {sqlstate})" if sqlstate else text
