"""What an upstream says while a call runs, carried to the caller waiting for it.

An MCP server's ``notifications/progress`` and ``notifications/message`` (logs) for a
call reach the worker running it; the caller waits on a web process (any one). The
worker pushes each, with the call's secrets taken out, onto a short list in Redis,
``toolhub:relay:<execution id>`` (``Listener``); the web process that waits for the
call takes what is there every ``POLL_SECONDS`` while its client listens (``take``) and
sends it on: progress with the client's own progress token, logs as its log messages.
Without Redis (embedded: the call runs in the web process) the list is this process's.
Nothing is published when the upstream says nothing; a list nobody takes expires.

What the caller wants to hear beyond progress (logs, from which level) is said when the
call is admitted, before it can run (``want``), and read by the worker when the call's
upstream is an MCP server (``Listener.wants``): only then does its session ask the
upstream for logs. A caller that asked for nothing costs nothing more.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import defaultdict
from collections.abc import Callable
from functools import cached_property
from typing import Any

from executions.services.shared_state import redis_client

logger = logging.getLogger(__name__)
POLL_SECONDS = 0.25
_KEY = "toolhub:relay:{}"
_WANTS_KEY = "toolhub:relay-wants:{}"
_TTL_SECONDS = 600
_MOST = 100  # events taken at once
_MOST_CHARS = 8000  # of one relayed message

_here: dict[str, list[dict[str, Any]]] = defaultdict(list)
_here_wants: dict[str, dict[str, Any]] = {}
_here_lock = threading.Lock()


class Listener:
    """What a running call's upstream says, published for its caller
    (``executors.base.Listener``). ``clean``: the call's secrets taken out of a value."""

    def __init__(self, execution_id, clean: Callable[[Any], Any]):
        self.key = str(execution_id)
        self.clean = clean

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        message = _bounded(self.clean(message)) if isinstance(message, str) else None
        publish(
            self.key, {"kind": "progress", "progress": progress, "total": total, "message": message}
        )

    def log(self, level: str, data: Any, logger_name: str | None) -> None:
        event = {"kind": "log", "level": level, "data": _bounded(self.clean(data)), "logger": None}
        if isinstance(logger_name, str):
            event["logger"] = _bounded(self.clean(logger_name))
        publish(self.key, event)

    @cached_property
    def wants(self) -> dict[str, Any]:
        """What the caller asked to hear (``want``): ``{"log_level": "info"}``, or ``{}``."""
        return wanted(self.key)


def _bounded(value: Any) -> Any:
    """``value``, or the start of its JSON text when that is longer than ``_MOST_CHARS``:
    a caller is not sent megabytes per log line, nor Redis made to keep them."""
    if isinstance(value, str):
        return value if len(value) <= _MOST_CHARS else value[:_MOST_CHARS] + "…"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return value if len(text) <= _MOST_CHARS else text[:_MOST_CHARS] + "…"


def want(execution_id, **wants: Any) -> None:
    """The caller of an admitted call wants to hear more than progress (``log_level``)."""
    key = str(execution_id)
    client = redis_client()
    if client is None:
        with _here_lock:
            if len(_here_wants) >= _MOST * 10:
                _here_wants.pop(next(iter(_here_wants)))
            _here_wants[key] = wants
        return
    try:
        client.set(_WANTS_KEY.format(key), json.dumps(wants), ex=_TTL_SECONDS)
    except Exception as exc:  # the call runs; its caller hears less
        logger.warning("could not say what the caller of execution %s listens to: %s", key, exc)


def wanted(execution_id) -> dict[str, Any]:
    key = str(execution_id)
    client = redis_client()
    if client is None:
        with _here_lock:
            return dict(_here_wants.get(key) or {})
    try:
        raw = client.get(_WANTS_KEY.format(key))
    except Exception as exc:
        logger.warning("could not read what the caller of execution %s listens to: %s", key, exc)
        return {}
    try:
        found = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


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
