"""The database executor's config keys: declared once, checked on save, read on each call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg
from django.conf import settings
from psycopg.conninfo import conninfo_to_dict

from executions.executors.base import ErrorType
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
from executions.executors.database.guard import _check_conninfo
from executions.executors.database.templates import TemplateError, compile_query
from executions.executors.database.values import (
    _FALSE_WORDS,
    _TRUE_WORDS,
    ALIASES_SETTING,
    DEFAULT_MAX_ROWS,
    POSTGRESQL,
    SQLITE,
    _Failure,
)


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
            target=True,
        ),
        ConfigKey(
            "connection_alias",
            f"a connection name from {ALIASES_SETTING}",
            text,
            destination=True,
            target=True,
        ),
        ConfigKey(
            "query_template",
            "one SQL statement with :name or %(name)s placeholders",
            text,
            check=_check_query_template,
            target=True,  # the statement run with the operator's connection
        ),
        ConfigKey(
            "read_only",
            "true or false (also 1/0, yes/no, on/off)",
            parse_read_only,
            True,
            check=_check_read_only,
            target=True,  # whether that statement may write
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
