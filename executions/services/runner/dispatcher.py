"""The task queue as the runner sees it, given once at start-up."""

from __future__ import annotations

from typing import Protocol

from executions.models import Execution
from registry.models import Tool


class Dispatcher(Protocol):
    """What the runner needs of the task queue (``executions.services.dispatch``),
    given once at start-up (``ExecutionsConfig.ready``): the runner is below the
    module that sends tasks, which runs calls here through it."""

    def enqueue(self, execution: Execution, tool: Tool) -> bool: ...

    def requeue(self, execution: Execution, tool: Tool, countdown: float) -> bool: ...

    def notify_agent(self, execution: Execution) -> None: ...


_dispatcher: Dispatcher | None = None


def dispatcher_register(dispatcher: Dispatcher) -> None:
    global _dispatcher
    _dispatcher = dispatcher


def dispatcher() -> Dispatcher:
    """The registered dispatcher (the executions app registers it when ready)."""
    if _dispatcher is None:
        raise RuntimeError("no dispatcher registered (executions app not ready)")
    return _dispatcher
