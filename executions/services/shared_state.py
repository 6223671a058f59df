"""Counters and semaphores shared by every web and worker process.

With Redis configured (production), state lives in Redis and every operation
is one atomic round trip, so two web processes together admit exactly N calls
and a slot taken on one machine is seen by all. Embedded (no Redis), the same
operations run in this process under a lock.
"""

from __future__ import annotations

import threading
import time
from functools import cache

from django.conf import settings


class SharedStateUnavailable(Exception):
    """The shared store (Redis) could not be reached."""


@cache
def redis_client():
    if not settings.REDIS_URL:
        return None
    import redis

    return redis.Redis.from_url(
        settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=2, health_check_interval=30
    )


_local_lock = threading.Lock()
_local_counters: dict[str, tuple[int, float]] = {}
_local_slots: dict[str, dict[str, float]] = {}

_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZSCORE', KEYS[1], ARGV[3]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
  return 1
end
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[4]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
  redis.call('EXPIRE', KEYS[1], ARGV[5])
  return 1
end
return 0
"""


def _wrap(exc: Exception) -> SharedStateUnavailable:
    return SharedStateUnavailable(f"{exc.__class__.__name__}: {exc}")


def counter_incr(key: str, window_seconds: int, delta: int = 1) -> int:
    """Add ``delta`` to a counter that lives ``window_seconds``; return the new value."""
    client = redis_client()
    if client is None:
        now = time.monotonic()
        with _local_lock:
            value, expires = _local_counters.get(key, (0, now + window_seconds))
            if expires <= now:
                value, expires = 0, now + window_seconds
            value += delta
            _local_counters[key] = (value, expires)
            return value
    try:
        pipe = client.pipeline(transaction=True)
        pipe.incrby(key, delta)
        pipe.expire(key, window_seconds + 1, nx=True)
        value, _ = pipe.execute()
        return int(value)
    except Exception as exc:
        raise _wrap(exc) from exc


def counter_incr_after(key: str, previous_key: str, window_seconds: int) -> tuple[int, int]:
    """Add 1 to the counter ``key`` (kept two windows, so the next window can read it)
    and read ``previous_key``'s count, in one round trip: ``(new value, previous)``."""
    client = redis_client()
    if client is None:
        now = time.monotonic()
        with _local_lock:
            value, expires = _local_counters.get(key, (0, now + 2 * window_seconds))
            if expires <= now:
                value, expires = 0, now + 2 * window_seconds
            value += 1
            _local_counters[key] = (value, expires)
            previous, previous_expires = _local_counters.get(previous_key, (0, now))
            return value, previous if previous_expires > now else 0
    try:
        pipe = client.pipeline(transaction=True)
        pipe.incrby(key, 1)
        pipe.expire(key, 2 * window_seconds + 1, nx=True)
        pipe.get(previous_key)
        value, _, previous = pipe.execute()
        return int(value), int(previous or 0)
    except Exception as exc:
        raise _wrap(exc) from exc


def slot_acquire(key: str, holder: str, limit: int, lease_seconds: float) -> bool:
    """Take one of ``limit`` slots for ``holder`` until the lease ends (re-entrant)."""
    now = time.time()
    client = redis_client()
    if client is None:
        with _local_lock:
            holders = _local_slots.setdefault(key, {})
            for name, until in list(holders.items()):
                if until <= now:
                    del holders[name]
            if holder in holders or len(holders) < limit:
                holders[holder] = now + lease_seconds
                return True
            return False
    try:
        script = client.register_script(_ACQUIRE)
        return bool(
            script(
                keys=[key],
                args=[now, now + lease_seconds, holder, limit, int(lease_seconds) + 60],
            )
        )
    except Exception as exc:
        raise _wrap(exc) from exc


def slot_release(key: str, holder: str) -> None:
    client = redis_client()
    if client is None:
        with _local_lock:
            _local_slots.get(key, {}).pop(holder, None)
        return
    try:
        client.zrem(key, holder)
    except Exception as exc:  # the lease frees it anyway
        raise _wrap(exc) from exc


def slot_count(key: str) -> int:
    client = redis_client()
    now = time.time()
    if client is None:
        with _local_lock:
            return sum(1 for until in _local_slots.get(key, {}).values() if until > now)
    return int(client.zcount(key, now, "+inf"))
