"""The HTTP executor: prepare, send, interpret; every failure a result, every secret redacted."""

from __future__ import annotations

import time
from typing import Any

from executions import egress
from executions.executors.base import ErrorType, ExecutorResult, ToolCall
from executions.executors.http.request import _prepare
from executions.executors.http.response import interpret
from executions.executors.http.sending import send
from executions.executors.http.values import IDEMPOTENT_METHODS, _Failure
from executions.redaction import redact, redact_text, with_encoded_forms


class HTTPExecutor:
    kind = "http"

    def execute(self, call: ToolCall) -> ExecutorResult:
        started = time.perf_counter()
        secrets: list[str] = [str(s) for s in call.secret_values if s is not None]
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
        return self._redacted(result, secrets)

    @staticmethod
    def _redacted(result: ExecutorResult, secrets: list[str]) -> ExecutorResult:
        variants = with_encoded_forms(secrets)
        if not variants:
            return result
        result.output = redact(result.output, variants)
        if result.error_message is not None:
            result.error_message = redact_text(result.error_message, variants)
        result.metadata = redact(result.metadata, variants)
        return result

    def _run(self, call: ToolCall, secrets: list[str], metadata: dict[str, Any]) -> ExecutorResult:
        prepared = _prepare(call, secrets)
        metadata["method"] = prepared.method
        response, body, truncated = send(prepared, metadata)
        return interpret(response, body, truncated, secrets, metadata)
