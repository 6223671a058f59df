"""An executor's result as the runner's boundary leaves it, for tests that call executors
directly: executors return what the tool gave them, and the runner removes every secret
of the call once (``executions.services.runner.redacting``)."""

from __future__ import annotations

import dataclasses

from executions.executors import lent_secrets
from executions.executors.base import Executor, ExecutorResult, ToolCall
from executions.services import run_configs
from executions.services.runner.redacting import CallSecrets


def call_secrets(call: ToolCall) -> CallSecrets:
    """The secrets the runner would know for ``call`` before it runs: those it carries and
    those its configs lend (an HTTP tool's authentication, an MCP server's token, …)."""
    lent = run_configs.texts(lent_secrets(call.tool_type, call.configs))
    return CallSecrets([*call.secret_values, *lent])


def run_at_the_boundary(executor: Executor, call: ToolCall) -> ExecutorResult:
    """``call`` run by ``executor`` and redacted as the runner redacts it."""
    secrets = call_secrets(call)
    call = dataclasses.replace(call, secret_values=secrets.values)
    return secrets.result(executor.execute(call))
