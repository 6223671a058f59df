"""Stopping a call that runs: the signal from whoever cancels it to the process running it.

``execution_cancel`` moves a running call to ``cancelled`` (the record names who did)
and then sends the signal: a key in Redis, read by the worker running the call, and
this process's own registry for a call that runs here (an inline wait, the embedded
mode). While the executor works, ``watching`` looks for the key every
``POLL_SECONDS`` in a thread of its own and, when it appears, sets the call's
``Cancellation``: the executor's callbacks stop the work (a process group killed, a
query cancelled, a request's connection closed, the MCP server told). Whatever the
executor then returns is not recorded: the row is no longer ``running``.
"""

from __future__ import annotations

import logging
import threading
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


def _signalled(client, key: str) -> bool:
    try:
        return bool(client.exists(_KEY.format(key)))
    except Exception:  # Redis away: look again next time
        return False


@contextmanager
def watching(execution_id, cancellation: Cancellation) -> Iterator[Cancellation]:
    """``cancellation`` set when the call ``execution_id`` is cancelled while the block runs."""
    key = str(execution_id or "")
    if not key:
        yield cancellation
        return
    with _here_lock:
        _here[key] = cancellation
    done = threading.Event()
    client = redis_client()
    watcher = None
    if client is not None:

        def watch():
            while not done.wait(POLL_SECONDS):
                if _signalled(client, key):
                    cancellation.set()
                    return

        watcher = threading.Thread(target=watch, name=f"cancel-watch-{key[:8]}", daemon=True)
        watcher.start()
    try:
        yield cancellation
    finally:
        done.set()
        with _here_lock:
            if _here.get(key) is cancellation:
                del _here[key]
        if watcher is not None:
            watcher.join(timeout=POLL_SECONDS * 2)
