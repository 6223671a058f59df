"""Executors by tool type. Instances are process-wide (their clients and pools are reused)."""

from __future__ import annotations

from functools import cache

from executions.executors.base import Executor


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
    raise LookupError(f"No executor for tool type '{kind}'.")
