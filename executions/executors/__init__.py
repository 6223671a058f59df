"""Executors by tool type. Instances are process-wide (their clients and pools are reused)."""

from __future__ import annotations

import importlib
from functools import cache

from executions.executors.base import Executor
from executions.executors.configs import ExecutorConfigs

# Where each kind's executor lives; each module declares its config keys in ``CONFIGS``.
_MODULES = {
    "http": "executions.executors.http",
    "database": "executions.executors.database",
    "mcp": "executions.executors.mcp",
    "python": "executions.executors.python",
    "command": "executions.executors.command",
}


@cache
def get_executor(kind: str) -> Executor:
    if kind == "http":
        from executions.executors.http import HTTPExecutor

        return HTTPExecutor()
    if kind == "database":
        from executions.executors.database import DatabaseExecutor

        return DatabaseExecutor()
    if kind == "mcp":
        from executions.executors.mcp import MCPExecutor

        return MCPExecutor()
    if kind == "python":
        import executions.python_tools  # noqa: F401  (registers the built-ins)
        from executions.executors.python import PythonExecutor

        return PythonExecutor()
    if kind == "command":
        from executions.executors.command import CommandExecutor

        return CommandExecutor()
    raise LookupError(f"No executor for tool type '{kind}'.")


def lent_secrets(kind: str, configs) -> list[str]:
    """The secrets a call of ``kind`` uses that are neither the tool's secret configs nor
    the caller's per-call secrets: what its configs resolve to (an MCP server's token
    and environment, an operator's database alias). Each executor module that has such
    secrets declares ``lent_secrets(configs)``; the runner redacts them with the rest."""
    module = _MODULES.get(kind)
    if module is None:
        return []
    lent = getattr(importlib.import_module(module), "lent_secrets", None)
    return list(lent(configs)) if lent is not None else []


def executor_configs(kind: str) -> ExecutorConfigs | None:
    """The config keys the executor of ``kind`` knows (None for a kind without an executor)."""
    module = _MODULES.get(kind)
    if module is None:
        return None
    return importlib.import_module(module).CONFIGS
