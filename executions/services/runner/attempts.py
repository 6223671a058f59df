"""The executor called under the call's budget, retried on retryable failures; every
secret the call used is removed from what comes back, once (``redacting``)."""

from __future__ import annotations

import logging
import time

from django.conf import settings

from executions import telemetry
from executions.executors import get_executor, lent_secrets
from executions.executors.base import Cancellation, ErrorType, ExecutorResult, ToolCall
from executions.models import Execution
from executions.services import cancellation, relay, run_configs, upstream_accounts
from executions.services.budget import total_budget_seconds
from executions.services.pinned_calls import pinned_hash
from executions.services.runner.finish import UPSTREAM_CONNECTION
from executions.services.runner.redacting import CallSecrets
from executions.services.sealed_inputs import sealed_read
from registry.models import Tool
from toolhub import log_secrets, tracing
from toolhub.db import pool

logger = logging.getLogger(__name__)
RETRY_AFTER_MAX_SECONDS = 30


def _backoff(attempt: int, result: ExecutorResult) -> float | None:
    """Seconds to wait before the next attempt, or None when the upstream asks for more
    than a call waits (its Retry-After is honoured by not retrying, never ignored)."""
    default = min(0.2 * (2 ** (attempt - 1)), 5.0)
    retry_after = (result.metadata or {}).get("retry_after")
    if isinstance(retry_after, int | float):
        if retry_after > RETRY_AFTER_MAX_SECONDS:
            return None
        return max(float(retry_after), default)  # a past date or 0: the usual backoff
    return default


class _Unprepared(Exception):
    """The call's configuration could not be loaded; ``secrets``: those known by then."""

    def __init__(self, exc: Exception, secrets: CallSecrets):
        super().__init__(str(exc))
        self.secrets = secrets


def _prepare(execution: Execution, spec):
    """The sealed inputs, configs, secrets and executor of one call."""
    tool = spec.tool
    secrets = CallSecrets()
    try:
        sealed = sealed_read(execution.sealed_secrets)
        secrets = CallSecrets(run_configs.secret_values([], sealed.secrets))
        configs, secret_configs = spec.runtime(run_configs.configs_for)
        # Every secret the call uses, whatever the executor: the tool's, the caller's
        # and those its configs resolve to (an MCP server's token, a database alias).
        lent = lent_secrets(tool.type, configs)
        secrets = CallSecrets(
            [*run_configs.secret_values(secret_configs, sealed.secrets), *run_configs.texts(lent)]
        )
        return sealed, configs, secrets, get_executor(tool.type)
    except Exception as exc:
        raise _Unprepared(exc, secrets) from exc
    finally:
        log_secrets.add(secrets.text)  # those known, for what is logged while it runs


def _tool_call(
    execution: Execution,
    tool: Tool,
    configs,
    inputs,
    secrets: CallSecrets,
    attempt,
    account,
    cancellation: Cancellation,
) -> ToolCall:
    return ToolCall(
        tool_name=tool.name,
        tool_type=tool.type,
        configs=configs,
        inputs=inputs,
        timeout_seconds=float(tool.timeout_seconds),
        # The executor may read up to the artifact cap; the row keeps at most
        # tool.max_response_bytes and the rest goes to the artifact.
        max_response_bytes=max(tool.max_response_bytes, settings.TOOLHUB_MAX_ARTIFACT_BYTES),
        execution_id=str(execution.pk),
        attempt=attempt,
        secret_values=secrets.values,
        pinned_definition_hash=pinned_hash(tool),
        caller_token=account.token if account is not None else "",
        cancellation=cancellation,
        listener=relay.Listener(execution.pk, secrets.value),
    )


def _callers_account(execution: Execution, configs, secrets: CallSecrets):
    """``(account, secrets)``: the caller's own upstream token when the tool acts with it
    (``upstream_accounts``; None otherwise), with the call's secrets grown by every token
    value it holds. Raises ``AccountUnavailable``."""
    account = upstream_accounts.account_for_call(execution, configs)
    if account is None:
        return None, secrets
    secrets = CallSecrets([*secrets.values, *account.secrets])
    log_secrets.add(secrets.text)
    return account, secrets


def run_with_retries(execution: Execution, spec) -> tuple[ExecutorResult, int, float]:
    tool = spec.tool
    started = time.monotonic()
    try:
        sealed, configs, secrets, executor = _prepare(execution, spec)
    except _Unprepared as unprepared:  # configuration that cannot even be loaded
        cause = unprepared.__cause__
        logger.warning("execution %s: cannot prepare: %s", execution.pk, type(cause).__name__)
        message = unprepared.secrets.text(str(unprepared))[:500]
        return (
            ExecutorResult(ok=False, error_type=ErrorType.CONFIG, error_message=message),
            0,
            0.0,
        )
    try:
        account, secrets = _callers_account(execution, configs, secrets)
    except upstream_accounts.AccountUnavailable as unavailable:  # nothing was sent
        result = ExecutorResult(
            ok=False, error_type=unavailable.error_type, error_message=unavailable.message
        )
        if unavailable.connection_id is not None:
            result.metadata[UPSTREAM_CONNECTION] = unavailable.connection_id
        return secrets.result(result), 0, (time.monotonic() - started) * 1000
    inputs = sealed.inputs(execution.input_data)
    deadline = started + total_budget_seconds(tool)
    # Someone may cancel the call while it runs: every attempt watches for it.
    with cancellation.watching(execution.pk, Cancellation()) as cancelled:
        result, attempt = _attempts(
            execution, spec, executor, configs, inputs, secrets, account, deadline, cancelled
        )
    if account is not None:  # which connection the call used (its id, never its token)
        result.metadata[UPSTREAM_CONNECTION] = account.connection_id
    # The one redaction: nothing of the result is read before it (the retry above
    # reads only its flags), and everything after it reads the redacted result.
    return secrets.result(result), attempt, (time.monotonic() - started) * 1000


def _attempts(execution, spec, executor, configs, inputs, secrets, account, deadline, cancelled):
    """The executor called until it succeeds, fails for good, runs out of retries or
    budget, or the call is cancelled; ``(result, attempts)``."""
    tool = spec.tool
    attempt = 0
    while True:
        attempt += 1  # recorded with the outcome: one write per run, not one per attempt
        call = _tool_call(execution, tool, configs, inputs, secrets, attempt, account, cancelled)
        # The upstream may take the tool's whole timeout: its connection goes back to
        # the pool meanwhile (the finish borrows one again).
        pool.release()
        result = _execute(executor, call, secrets)
        if cancelled.is_set:
            return _cancelled_result(), attempt
        if result.ok or not result.retryable or attempt > tool.max_retries:
            break
        pause = _backoff(attempt, result)
        if pause is None or time.monotonic() + pause + tool.timeout_seconds > deadline:
            retry_after = (result.metadata or {}).get("retry_after")
            if isinstance(retry_after, int | float) and result.error_message:
                result.error_message += f" (the upstream asks to retry after {retry_after:g} s)"
            break
        if cancelled.wait(pause):
            return _cancelled_result(), attempt
    return result, attempt


def _cancelled_result() -> ExecutorResult:
    """What a cancelled call's run returns (not recorded: the row is cancelled already)."""
    return ExecutorResult(
        ok=False, error_type=ErrorType.CANCELLED, error_message="The call was cancelled."
    )


def _execute(executor, call: ToolCall, secrets: CallSecrets) -> ExecutorResult:
    """One attempt: the executor's result (an executor that raises has failed the call)."""
    with tracing.span("toolhub.executor", telemetry.call_attributes(call)) as current:
        try:
            result = executor.execute(call)
        except Exception as exc:  # an executor bug must still end the execution
            secrets.log_crash(logger, "execution %s: executor crashed", call.execution_id, exc=exc)
            # Its text as it is: it is redacted with the rest of the result, whole
            # (a cut before the redaction could leave a piece of a secret).
            result = ExecutorResult(
                ok=False, error_type=ErrorType.TOOL, error_message=f"{type(exc).__name__}: {exc}"
            )
        current.set_attributes(telemetry.result_attributes(result))
        if not result.ok:
            tracing.failed(current, result.error_type or "failed")
        return result
