"""What an upstream says while a call runs, carried to the caller waiting for it.

An MCP server's ``notifications/progress`` for a call reach the worker running it; the
caller waits on a web process (any one). The worker pushes each onto a short list in
Redis, ``toolhub:relay:<execution id>`` (``publish``); the web process that waits for
the call takes what is there every ``POLL_SECONDS`` while its client asked for
progress (``take``) and sends it on with the client's own progress token. Without
Redis (embedded: the call runs in the web process) the list is this process's. Nothing
is published when the upstream says nothing; a list nobody takes expires.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import defaultdict
from typing import Any

from executions.services.shared_state import redis_client

logger = logging.getLogger(__name__)
POLL_SECONDS = 0.25
_KEY = "toolhub:relay:{}"
_TTL_SECONDS = 600
_MOST = 100  # events taken at once

_here: dict[str, list[dict[str, Any]]] = defaultdict(list)
_here_lock = threading.Lock()


def progress_publisher(execution_id):
    """``on_progress`` for a call's executor: each upstream progress event, published."""
    key = str(execution_id)

    def on_progress(progress: float, total: float | None, message: str | None) -> None:
        event = {"kind": "progress", "progress": progress, "total": total, "message": message}
        publish(key, event)

    return on_progress


def publish(execution_id, event: dict[str, Any]) -> None:
    key = str(execution_id)
    client = redis_client()
    if client is None:
        with _here_lock:
            if key not in _here and len(_here) >= _MOST * 10:
                _here.pop(next(iter(_here)))  # the oldest call's, which nobody took
            _here[key].append(event)
            del _here[key][:-_MOST]
        return
    try:
        pipe = client.pipeline(transaction=False)
        pipe.rpush(_KEY.format(key), json.dumps(event))
        pipe.ltrim(_KEY.format(key), -_MOST, -1)
        pipe.expire(_KEY.format(key), _TTL_SECONDS)
        pipe.execute()
    except Exception as exc:  # a lost progress event never fails the call
        logger.warning("could not relay an event of execution %s: %s", key, exc)


def take(execution_id) -> list[dict[str, Any]]:
    """The events published for the call since the last take, oldest first."""
    key = str(execution_id)
    client = redis_client()
    if client is None:
        with _here_lock:
            return _here.pop(key, [])
    try:
        raw = client.lpop(_KEY.format(key), _MOST) or []
    except Exception as exc:
        logger.warning("could not read the relayed events of execution %s: %s", key, exc)
        return []
    events = []
    for item in raw:
        try:
            events.append(json.loads(item))
        except ValueError:
            continue
    return events
