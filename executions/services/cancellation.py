"""Stopping a call that runs: the signal from whoever cancels it to the process running it.

``execution_cancel`` moves a running call to ``cancelled`` (the record names who did)
and then sends the signal: a key in Redis, read by the worker running the call, and
this process's own registry for a call that runs here (an inline wait, the embedded
mode). While the executor works, one thread of the process looks for the keys of
all its running calls every ``POLL_SECONDS`` (``watching``) and, when one appears,
sets that call's ``Cancellation``: the executor's callbacks stop the work (a process
group killed, a query cancelled, a request's connection closed, the MCP server told).
Whatever the executor then returns is not recorded: the row is no longer ``running``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from executions.executors.base import Cancellation
from executions.services.shared_state import redis_client

logger = logging.getLogger(__name__)
POLL_SECONDS = 0.5
_KEY = "toolhub:cancel:{}"
_KEY_SECONDS = 24 * 3600  # longer than any call runs

_here: dict[str, Cancellation] = {}
_here_lock = threading.Lock()


def cancel_signal(execution_id) -> None:
    """Tell the process running ``execution_id`` to stop it (any process, any machine)."""
    key = str(execution_id)
    with _here_lock:
        running_here = _here.get(key)
    if running_here is not None:
        running_here.set()
    client = redis_client()
    if client is None:
        return
    try:
        client.set(_KEY.format(key), "1", ex=_KEY_SECONDS)
    except Exception:  # the row says cancelled; the work ends at its own deadline
        logger.warning("cancelling %s: Redis unreachable, the worker was not told", key)


class _Watcher:
    """One thread per process looks for the cancel keys of every call running in it: one
    Redis round trip per ``POLL_SECONDS`` however many there are, none when there are none
    (the thread waits for the first call and stops looking when the last one ends)."""

    def __init__(self):
        self.wake = threading.Condition(_here_lock)
        self.thread: threading.Thread | None = None

    def ensure_running(self) -> None:
        """Start the thread if it is not running (called holding ``_here_lock``)."""
        if self.thread is None or not self.thread.is_alive():
            self.thread = threading.Thread(target=self.run, name="cancel-watch", daemon=True)
            self.thread.start()
        self.wake.notify()

    def run(self) -> None:
        client = redis_client()
        while True:
            with _here_lock:
                while not _here:
                    self.wake.wait()
                running = dict(_here)
            time.sleep(POLL_SECONDS)
            for key in _signalled(client, list(running)):
                running[key].set()


def _signalled(client, keys: list[str]) -> list[str]:
    """Those of ``keys`` whose call someone cancelled (none when Redis is away: next time)."""
    try:
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.exists(_KEY.format(key))
        return [key for key, found in zip(keys, pipe.execute(), strict=True) if found]
    except Exception:
        return []


_watcher = _Watcher()


@contextmanager
def watching(execution_id, cancellation: Cancellation) -> Iterator[Cancellation]:
    """``cancellation`` set when the call ``execution_id`` is cancelled while the block runs."""
    key = str(execution_id or "")
    if not key:
        yield cancellation
        return
    with _here_lock:
        _here[key] = cancellation
        if redis_client() is not None:
            _watcher.ensure_running()
    try:
        yield cancellation
    finally:
        with _here_lock:
            if _here.get(key) is cancellation:
                del _here[key]
