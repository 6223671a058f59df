"""The contract between the execution pipeline and the executors.

An executor receives a ``ToolCall`` (validated inputs, decrypted configs, the
limits that apply) and returns one ``ExecutorResult`` shape, whatever the kind
of tool. Executors never raise for an upstream failure: they return
``ok=False`` with an ``error_type`` and say whether a retry could help
(``retryable``). Retrying, timing out the whole call and recording are the
pipeline's job.

Executors never redact: their output, error message and metadata are returned
as the tool gave them, with the secret values they resolved while running
(``secrets_used``). The runner removes every secret of the call once, in every
form, before anything is stored, logged, guarded or answered
(``executions.services.runner.redacting``). An executor uses
``call.secret_values`` only where it cuts a text (so that no piece of a secret
is left at the cut) and to decide what it sends where.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


class ErrorType:
    """Error types an executor may report (stored on the execution)."""

    CONFIG = "config_error"  # the tool is misconfigured (missing base_url, bad template…)
    INPUT = "input_error"  # inputs passed validation but cannot be used (missing path placeholder…)
    EGRESS_DENIED = "egress_denied"  # the destination address is not allowed
    CONNECTION = "connection_error"  # could not connect / connection dropped
    TIMEOUT = "timeout"
    UPSTREAM = "upstream_error"  # the upstream answered with an error (HTTP 4xx/5xx, isError)
    TOOL = "tool_error"  # the tool itself failed (Python exception, SQL error)
    READ_ONLY = "read_only_violation"  # a write was attempted on a read-only database tool
    INTERNAL = "internal_error"  # ToolHub itself failed while running the call (not retried)
    # The MCP server shows another definition of the tool than the approved one (not sent)
    DEFINITION_CHANGED = "tool_definition_changed"
    CANCELLED = "cancelled"  # someone cancelled the call while it ran


class Cancellation:
    """A running call's cancellation: set once, from another thread, when someone cancels
    the call. An executor registers how to stop its work (``on_cancel``: kill a process
    group, cancel a query, close a connection, tell an MCP server), and may look at
    ``is_set`` between steps. Callbacks run in the thread that cancels: they must be
    quick and safe to call while the executor's thread is in the middle of its work."""

    def __init__(self):
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], Any]] = []

    @property
    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; True as soon as the call is cancelled."""
        return self._event.wait(seconds)

    def on_cancel(self, callback: Callable[[], Any]) -> Callable[[], None]:
        """Call ``callback`` when the call is cancelled (at once if it already is); returns
        a function that forgets it (the work it stops is over)."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return lambda: self._forget(callback)
        _quietly(callback)
        return lambda: None

    def _forget(self, callback) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    def set(self) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            _quietly(callback)


def _quietly(callback) -> None:
    try:
        callback()
    except Exception:  # the work may have ended meanwhile: nothing left to stop
        logging.getLogger(__name__).debug("a cancellation callback failed", exc_info=True)


class Listener(Protocol):
    """The caller of a running call, listening: what its upstream says goes here. None of
    these may block long."""

    def progress(self, progress: float, total: float | None, message: str | None) -> None: ...

    def log(self, level: str, data: Any, logger_name: str | None) -> None: ...

    @property
    def wants(self) -> Mapping[str, Any]:
        """What the caller asked to hear beyond progress: ``log_level`` (an MCP level)."""
        ...


@dataclass(frozen=True)
class ToolCall:
    tool_name: str
    tool_type: str
    configs: Mapping[str, Any]
    inputs: Mapping[str, Any]
    timeout_seconds: float
    max_response_bytes: int = 1024 * 1024
    execution_id: str | None = None
    attempt: int = 1
    # Every secret the runner knows the call uses (the runner removes them from what
    # comes back; an executor needs them only to cut a text without splitting one).
    secret_values: tuple[str, ...] = ()
    # The hash of the tool's approved definition as its MCP server gives it (empty:
    # none pinned); the MCP executor refuses a call whose server shows another.
    pinned_definition_hash: str = ""
    # An HTTP tool of auth_type ``caller_account``: the access token of the person the call
    # is made for, at the tool's upstream provider (also in ``secret_values``). The
    # executor sends it to the tool's own origin only.
    caller_token: str = ""
    # Set when someone cancels the call while it runs (``executions.services.cancellation``).
    cancellation: Cancellation = field(default_factory=Cancellation, compare=False, repr=False)
    # Where what the upstream says while the call runs goes: to the caller waiting for it
    # (``executions.services.relay``).
    listener: Listener | None = field(default=None, compare=False, repr=False)


@dataclass
class ExecutorResult:
    ok: bool
    output: Any = None
    error_type: str | None = None
    error_message: str | None = None
    retryable: bool = False
    upstream_status: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    latency_ms: float = 0.0
    # Secret values the executor resolved while running the call, beyond
    # ``call.secret_values`` (a header rendered from an input, credentials in a
    # templated URL): the runner removes them with the others, everywhere.
    secrets_used: tuple[str, ...] = ()
    # Values kept out of the error message only (a database's login name: an output
    # may rightly hold it, a refusal quoting it would tell the caller how to log in).
    hidden_in_errors: tuple[str, ...] = ()


def failure_since(started: float) -> Callable[..., ExecutorResult]:
    """A maker of failed results for a call that began at ``started`` (``perf_counter``):
    the message as it is (the runner redacts it), the latency up to now."""

    def failure(error_type: str, message: str, **extra: Any) -> ExecutorResult:
        return ExecutorResult(
            ok=False,
            error_type=error_type,
            error_message=message,
            latency_ms=(time.perf_counter() - started) * 1000,
            **extra,
        )

    return failure


class Executor(Protocol):
    kind: str

    def execute(self, call: ToolCall) -> ExecutorResult: ...
