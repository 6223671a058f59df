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
        settings.REDIS_URL,
        socket_connect_timeout=settings.TOOLHUB_REDIS_CONNECT_TIMEOUT,
        socket_timeout=settings.TOOLHUB_REDIS_TIMEOUT,
        health_check_interval=30,
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


def counter_incr(
    key: str, lifetime_seconds: int, delta: int = 1, *, read: str | None = None
) -> tuple[int, int]:
    """Add ``delta`` to a counter that lives ``lifetime_seconds`` from its first count,
    and read the counter ``read`` (0 when absent), in one round trip:
    ``(new value, value read)``."""
    client = redis_client()
    if client is None:
        now = time.monotonic()
        with _local_lock:
            value, expires = _local_counters.get(key, (0, now + lifetime_seconds))
            if expires <= now:
                value, expires = 0, now + lifetime_seconds
            value += delta
            _local_counters[key] = (value, expires)
            other, other_expires = _local_counters.get(read, (0, now)) if read else (0, now)
            return value, other if other_expires > now else 0
    try:
        pipe = client.pipeline(transaction=True)
        pipe.incrby(key, delta)
        pipe.expire(key, lifetime_seconds + 1, nx=True)
        if read:
            pipe.get(read)
        value, _, *other = pipe.execute()
        return int(value), int(other[0] or 0) if other else 0
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
