"""The database executor: one parameterised statement, every failure a result, returned raw
(the runner redacts the connection's secrets with the call's others)."""

from __future__ import annotations

import time
from typing import Any

from executions.executors.base import ErrorType, ExecutorResult, ToolCall
from executions.executors.database.configs import _connection_string
from executions.executors.database.options import _options
from executions.executors.database.postgresql import run_postgresql
from executions.executors.database.secrets import connection_secrets, connection_user
from executions.executors.database.sqlite import run_sqlite
from executions.executors.database.values import POSTGRESQL, _Failure


class DatabaseExecutor:
    kind = "database"

    def execute(self, call: ToolCall) -> ExecutorResult:
        started = time.perf_counter()
        # The connection's secrets (the runner knows them already: ``lent_secrets``), and
        # its login name, kept out of error messages only.
        secrets: tuple[str, ...] = ()
        hidden_in_errors: tuple[str, ...] = ()
        metadata: dict[str, Any] = {}
        try:
            connection_string, trusted = _connection_string(call.configs)
            secrets = tuple(connection_secrets(connection_string))
            hidden_in_errors = tuple(u for u in [connection_user(connection_string)] if u)
            opts = _options(call, connection_string, trusted)
            metadata = {
                "engine": opts.dialect,
                "read_only": opts.read_only,
                "max_rows": opts.max_rows,
            }
            if opts.dialect == POSTGRESQL:
                output = run_postgresql(opts, cancellation=call.cancellation)
            else:
                output = run_sqlite(opts, cancellation=call.cancellation)
        except _Failure as failure:
            return ExecutorResult(
                ok=False,
                error_type=failure.error_type,
                error_message=failure.message,
                retryable=failure.retryable,
                metadata=metadata,
                latency_ms=(time.perf_counter() - started) * 1000,
                secrets_used=secrets,
                hidden_in_errors=hidden_in_errors,
            )
        except Exception as exc:  # an executor never raises: report the unexpected
            return ExecutorResult(
                ok=False,
                error_type=ErrorType.TOOL,
                error_message=f"{type(exc).__name__}: {exc}",
                metadata=metadata,
                latency_ms=(time.perf_counter() - started) * 1000,
                secrets_used=secrets,
                hidden_in_errors=hidden_in_errors,
            )
        return ExecutorResult(
            ok=True,
            output=output,
            metadata=metadata,
            latency_ms=(time.perf_counter() - started) * 1000,
            secrets_used=secrets,
        )

    # ------------------------------------------------------------------ PostgreSQL
