"""The HTTP executor: prepare, send, interpret; every failure a result, returned raw with
the secrets it resolved (the runner redacts them)."""

from __future__ import annotations

import time
from typing import Any

from executions import egress
from executions.executors.base import ErrorType, ExecutorResult, ToolCall
from executions.executors.http.pinned import cancellable
from executions.executors.http.request import _prepare
from executions.executors.http.response import interpret
from executions.executors.http.sending import send
from executions.executors.http.values import IDEMPOTENT_METHODS, _Failure


class HTTPExecutor:
    kind = "http"

    def execute(self, call: ToolCall) -> ExecutorResult:
        started = time.perf_counter()
        given = [str(s) for s in call.secret_values if s is not None]
        secrets = list(given)  # and those the call resolves: rendered headers, URL credentials
        metadata: dict[str, Any] = {}
        method = str(call.configs.get("method") or "GET").strip().upper()
        idempotent = method in IDEMPOTENT_METHODS
        try:
            result = self._run(call, secrets, metadata)
        except _Failure as failure:
            result = ExecutorResult(
                ok=False,
                output=failure.output,
                error_type=failure.error_type,
                error_message=failure.message,
                retryable=failure.retryable and idempotent,
                upstream_status=failure.upstream_status,
            )
        except egress.EgressDenied as exc:
            result = ExecutorResult(
                ok=False, error_type=ErrorType.EGRESS_DENIED, error_message=str(exc)
            )
        result.metadata = {**metadata, **result.metadata}
        result.latency_ms = round((time.perf_counter() - started) * 1000, 3)
        result.secrets_used = tuple(dict.fromkeys(s for s in secrets[len(given) :] if s))
        return result

    def _run(self, call: ToolCall, secrets: list[str], metadata: dict[str, Any]) -> ExecutorResult:
        prepared = _prepare(call, secrets)
        metadata["method"] = prepared.method
        with cancellable(call.cancellation):  # a cancelled call's request is cut off
            response, body, truncated = send(prepared, metadata)
        return interpret(response, body, truncated, secrets, metadata)
