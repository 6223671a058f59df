"""The time a call's guards may take: one budget per stage of a call, checked as they go.

Guards run in the web process (inline calls) and in workers, on outputs as large
as a tool's ``max_response_bytes``. The built-in guards scan in time linear in
the output, but an output of megabytes, or an operator's slow function, still
takes time a caller waits for and a worker is held for. ``TOOLHUB_GUARD_BUDGET_SECONDS``
bounds it: the guards of one stage of one call share that budget, and when it is
spent the guard running fails closed (arguments refused, output withheld,
``"error": "guard_failed"``), like a guard that raises.

Checked cooperatively: ``findings.texts`` (every built-in guard, and operators'
functions that walk an output with it) checks it at each text, the scanners every
few hundred matches, and the engine after each guard returns. Python cannot stop
a function from outside, so an operator's function that neither walks with
``texts`` nor returns is not cut short; its guard still fails when it returns late.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")
_deadline: ContextVar[float | None] = ContextVar("toolhub_guard_deadline", default=None)


class GuardBudgetExceeded(RuntimeError):
    """The guards of a call took longer than ``TOOLHUB_GUARD_BUDGET_SECONDS``."""


@contextmanager
def guard_budget(seconds: float | None) -> Iterator[None]:
    """Within this block, ``check_budget`` raises once ``seconds`` have passed (None: no limit)."""
    token = _deadline.set(None if seconds is None else time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def check_budget() -> None:
    """Raise ``GuardBudgetExceeded`` when the running guards' budget is spent."""
    deadline = _deadline.get()
    if deadline is not None and time.monotonic() > deadline:
        raise GuardBudgetExceeded("the guards' time budget is spent")


def budgeted(items: Iterable[T], every: int = 256) -> Iterator[T]:
    """``items``, checking the budget every ``every`` of them (a scan of one long text
    with many matches is cut short too)."""
    for count, item in enumerate(items, 1):
        if count % every == 0:
            check_budget()
        yield item
