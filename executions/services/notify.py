"""Waking a request that waits for its execution to finish.

With Redis configured, the worker pushes to a per-execution list and the web
process blocks on it (``BLPOP``): no polling, and the answer arrives the
moment the row is final. Without Redis, tasks run in-process (the execution is
already final when the wait starts) or the waiter polls the row.
"""

from __future__ import annotations

import logging
import time
from functools import cache

from django.conf import settings

from toolhub.db import pool

logger = logging.getLogger(__name__)
_KEY = "toolhub:execution-done:{}"
_TTL_SECONDS = 300
# The longest one BLPOP blocks; the row is re-checked after each.
_BLPOP_SECONDS = 5.0


@cache
def _redis(blocks_for: float = 0.0):
    """A client whose commands may take ``blocks_for`` seconds besides the usual allowance:
    a Redis that never answers ends a push or a wait (then polled) instead of holding it."""
    if not settings.REDIS_URL:
        return None
    import redis

    return redis.Redis.from_url(
        settings.REDIS_URL,
        socket_connect_timeout=settings.TOOLHUB_REDIS_CONNECT_TIMEOUT,
        socket_timeout=settings.TOOLHUB_REDIS_TIMEOUT + blocks_for,
        health_check_interval=30,
    )


def notify_done(execution_id) -> None:
    client = _redis()
    if client is None:
        return
    key = _KEY.format(execution_id)
    try:
        pipe = client.pipeline(transaction=False)
        pipe.rpush(key, "1")
        pipe.expire(key, _TTL_SECONDS)
        pipe.execute()
    except Exception as exc:  # a missed wake-up only makes a waiter poll; never fail the run
        logger.warning("could not notify waiters of execution %s: %s", execution_id, exc)


def wait_done(execution_id, timeout: float, is_done) -> bool:
    """Block until ``is_done()`` or ``timeout`` seconds pass. Returns ``is_done()``.

    With Redis the wake-up is a list, not a pub/sub message: a notification
    pushed before the wait starts is still there, so no read is needed first.
    """
    client = _redis(_BLPOP_SECONDS)
    if client is None and is_done():
        return True
    deadline = time.monotonic() + timeout
    key = _KEY.format(execution_id)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return is_done()
        if client is not None:
            pool.release()  # a wait of seconds holds no database connection
            try:
                # BLPOP takes whole or fractional seconds; re-check the row after each wake-up.
                if client.blpop([key], timeout=max(min(remaining, _BLPOP_SECONDS), 0.01)):
                    # Pushed only once the row is final and committed.
                    return True
            except Exception as exc:
                logger.warning("waiting on Redis failed (%s); polling instead", exc)
                client = None
            if is_done():
                return True
        else:
            time.sleep(min(0.05, remaining))
            if is_done():
                return True
