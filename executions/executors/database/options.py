"""One call's options: where it connects, the compiled statement, its parameters and limits."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from psycopg.types.json import Jsonb

from executions.executors.base import ErrorType, ToolCall
from executions.executors.configs import (
    ConfigValueError,
    positive_number,
)
from executions.executors.database.configs import _config, connection_target
from executions.executors.database.guard import (
    _guard_postgresql,
    _guard_sqlite,
    _refuse_own_postgresql_alias,
)
from executions.executors.database.templates import CompiledQuery, TemplateError, compile_query
from executions.executors.database.values import POSTGRESQL, SQLITE, _Failure


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
