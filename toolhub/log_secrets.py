"""The secrets of the call in hand, kept out of every log line written while it runs.

A call's secrets are removed from what it returns by the runner (``executions.
services.runner.redacting``); a log line is another way out. While a call is
claimed (``executions.services.runner.claimed``), ``scope()`` is open in that
thread: the runner adds the call's scrubber as soon as it knows the secrets
(``add``), and ``SecretsLogFilter``, on every handler ToolHub configures (the
console handler, and Celery's in a worker), removes them from the message, the
exception's traceback and the stack of every record logged in the scope, by any
logger (ours, a library's, Django's). Outside a scope it does nothing.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Scrubber = Callable[[str], str]

_scrubbers: ContextVar[list[Scrubber] | None] = ContextVar("toolhub_log_secrets", default=None)


@contextmanager
def scope() -> Iterator[None]:
    """Log lines written in this block (this thread or task) pass the scrubbers added in it."""
    token = _scrubbers.set([])
    try:
        yield
    finally:
        _scrubbers.reset(token)


def add(scrub: Scrubber) -> None:
    """Remove what ``scrub`` removes from the log lines of the open scope (none: nothing)."""
    scrubbers = _scrubbers.get()
    if scrubbers is not None:
        scrubbers.append(scrub)


def _scrubbed(text: str, scrubbers: list[Scrubber]) -> str:
    for scrub in scrubbers:
        text = scrub(text)
    return text


class SecretsLogFilter(logging.Filter):
    """Removes the open scope's secrets from a record: its message (arguments included),
    its exception's traceback and its stack. Never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        scrubbers = _scrubbers.get()
        if not scrubbers:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: its arguments cannot be merged
            message = str(record.msg)
        record.msg, record.args = _scrubbed(message, scrubbers), None
        if record.exc_info:
            trace = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            record.exc_text, record.exc_info = _scrubbed(trace, scrubbers), None
        elif record.exc_text:
            record.exc_text = _scrubbed(record.exc_text, scrubbers)
        if record.stack_info:
            record.stack_info = _scrubbed(record.stack_info, scrubbers)
        return True
