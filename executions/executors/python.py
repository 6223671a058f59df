"""Python executor: runs a function registered with ``@tool`` (executions.python_tools).

The function is found by ``configs["function"]`` (a registered name), never by
the tool's name: a rename must not change what runs (the registry stores the
function of every Python tool, and only platform admins change it). A tool
without it is a config_error. Only registered functions can run: nothing here
imports a module path that came from the database. An unknown name is a config_error.
``configs["module"]`` only records where the function comes from (catalog
files carry it); it is never imported. ``CONFIGS`` declares both keys: the
executor reads them through it, and the registry checks a config against it
when it is saved.

Inputs are checked against the function's derived input schema (input_error),
Enum parameters receive the Enum member, then the function runs in its own
daemon thread while the caller waits at most ``call.timeout_seconds``:

- sync functions are called directly in that thread;
- async functions run with ``asyncio.run`` in that thread (so it works whether
  or not the calling thread already runs an event loop) and are cancelled at
  the deadline.

On expiry the result is ``timeout`` (not retryable). A sync function cannot be
killed: it is abandoned and keeps running in its daemon thread until it returns
(its result is discarded). An exception gives ``tool_error`` with
``"ExceptionType: message"``. The return value is made JSON-safe
(:mod:`executions.jsonsafe`). Nothing is redacted here: the runner removes the
call's secrets from the output and the message.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from jsonschema import Draft202012Validator

from executions.executors.base import ErrorType, ExecutorResult, ToolCall, failure_since
from executions.executors.configs import (
    ConfigError,
    ConfigKey,
    ConfigValueError,
    ExecutorConfigs,
    got,
    text,
)
from executions.jsonsafe import json_safe
from executions.python_tools import registry as default_registry
from executions.python_tools.registry import TOOL_NAME_RE, RegisteredTool, ToolRegistry

ASYNC_CANCEL_GRACE_SECONDS = 0.25  # time an async tool gets to handle its cancellation

_MODULE_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _function_name(value: Any) -> str:
    name = text(value)
    if not TOOL_NAME_RE.match(name):
        raise ConfigValueError(got(value))
    return name


def _module_path(value: Any) -> str:
    path = text(value)
    if not _MODULE_PATH.match(path):
        raise ConfigValueError(got(value))
    return path


CONFIGS = ExecutorConfigs(
    "python",
    [
        ConfigKey(
            "function",
            "the name a Python tool is registered under (letters, digits, _ and -; at most 64)",
            _function_name,
            target=True,
        ),
        ConfigKey("module", "a dotted Python module path (recorded, never imported)", _module_path),
    ],
)


class _DeadlineExceeded(Exception):
    """Raised in the worker when an async tool did not finish in time."""


class _InputProblem(Exception):
    pass


def _arguments(entry: RegisteredTool, inputs: Mapping[str, Any]) -> dict[str, Any]:
    validator = Draft202012Validator(entry.input_schema)
    errors = sorted(validator.iter_errors(dict(inputs)), key=lambda e: list(e.path))
    if errors:
        problems = []
        for error in errors[:5]:
            where = "/".join(str(p) for p in error.path)
            problems.append(f"{where}: {error.message}" if where else error.message)
        raise _InputProblem("invalid input: " + "; ".join(problems))
    specs = {spec.name: spec for spec in entry.specs}
    kwargs: dict[str, Any] = {}
    for name, value in inputs.items():
        spec = specs[name]
        if spec.enum_class is not None and value is not None:
            value = spec.enum_class(value)  # the schema's enum already checked the value
        kwargs[name] = value
    return kwargs


async def _run_coroutine(function: Callable[..., Any], kwargs: dict[str, Any], timeout: float):
    task = asyncio.ensure_future(function(**kwargs))
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if task in done:
        return task.result()
    task.cancel()
    await asyncio.wait({task}, timeout=ASYNC_CANCEL_GRACE_SECONDS)
    raise _DeadlineExceeded


def _close_thread_db_connections() -> None:
    """Django opens per-thread connections; a tool that used the ORM must not leak them."""
    try:
        from django.db import connections

        connections.close_all()
    except Exception:  # noqa: S110 - best effort; Django may not be configured
        pass


def _work(
    future: concurrent.futures.Future,
    entry: RegisteredTool,
    kwargs: dict[str, Any],
    timeout: float,
) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        if entry.is_async:
            result = asyncio.run(_run_coroutine(entry.function, kwargs, timeout))
        else:
            result = entry.function(**kwargs)
            if inspect.isawaitable(result):  # a plain function that returned a coroutine
                awaitable = result
                result = asyncio.run(_run_coroutine(lambda: awaitable, {}, timeout))
    except BaseException as exc:  # SystemExit etc. from a tool is its failure, not ours
        future.set_exception(exc)
    else:
        future.set_result(result)
    finally:
        _close_thread_db_connections()


class PythonExecutor:
    kind = "python"

    def __init__(self, registry: ToolRegistry | None = None):
        self.registry = registry if registry is not None else default_registry

    def execute(self, call: ToolCall) -> ExecutorResult:
        started = time.perf_counter()
        failure = failure_since(started)

        try:
            name = CONFIGS.read(call.configs, "function")
        except ConfigError as exc:
            return failure(ErrorType.CONFIG, str(exc))
        if not name:
            return failure(
                ErrorType.CONFIG,
                "a Python tool names the function it runs in its config 'function' (a platform "
                "admin sets it)",
            )
        entry = self.registry.get(name) if isinstance(name, str) else None
        if entry is None:
            return failure(
                ErrorType.CONFIG,
                f"no registered Python function named {name!r} (the module defining it must "
                "be listed in TOOLHUB_PYTHON_TOOL_MODULES)",
            )
        metadata = {"function": entry.name, "is_async": entry.is_async}
        timeout = call.timeout_seconds
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
            return failure(ErrorType.CONFIG, "timeout_seconds must be a positive number")
        try:
            kwargs = _arguments(entry, call.inputs)
        except _InputProblem as exc:
            return failure(ErrorType.INPUT, str(exc), metadata=metadata)

        future: concurrent.futures.Future = concurrent.futures.Future()
        worker = threading.Thread(
            target=_work,
            args=(future, entry, kwargs, float(timeout)),
            name=f"toolhub-python-{entry.name}",
            daemon=True,  # an abandoned sync tool must not keep the process alive
        )
        worker.start()
        wait = float(timeout) + (ASYNC_CANCEL_GRACE_SECONDS if entry.is_async else 0.0)
        # A cancelled call stops waiting: its thread is abandoned, as at a timeout.
        stop: concurrent.futures.Future = concurrent.futures.Future()
        forget = call.cancellation.on_cancel(lambda: stop.set_result(None))
        try:
            concurrent.futures.wait([future, stop], wait, concurrent.futures.FIRST_COMPLETED)
        finally:
            forget()
        if stop.done() and not future.done():
            return failure(ErrorType.CANCELLED, "the call was cancelled", metadata=metadata)
        try:
            value = future.result(timeout=0)
        except BaseException as exc:
            # concurrent.futures.TimeoutError is the builtin TimeoutError: tell the wait
            # expiring apart from a TimeoutError the tool itself raised.
            raised_by_tool = future.done() and future.exception() is exc
            if not raised_by_tool:
                if isinstance(exc, TimeoutError):
                    return self._timed_out(failure, entry, timeout, metadata)
                raise
            if isinstance(exc, _DeadlineExceeded):
                return self._timed_out(failure, entry, timeout, metadata)
            return failure(ErrorType.TOOL, f"{type(exc).__name__}: {exc}", metadata=metadata)
        try:
            output = json_safe(value)
        except Exception as exc:
            return failure(
                ErrorType.TOOL,
                f"unusable return value: {type(exc).__name__}: {exc}",
                metadata=metadata,
            )
        return ExecutorResult(
            ok=True,
            output=output,
            metadata=metadata,
            latency_ms=(time.perf_counter() - started) * 1000,
        )

    @staticmethod
    def _timed_out(failure, entry: RegisteredTool, timeout: float, metadata) -> ExecutorResult:
        how = "cancelled" if entry.is_async else "abandoned (a running thread cannot be killed)"
        return failure(
            ErrorType.TIMEOUT,
            f"Python tool {entry.name!r} did not finish within {timeout:g}s; it was {how}",
            metadata=metadata,
        )
