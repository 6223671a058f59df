"""``Idempotency-Key`` on ``POST /executions``: a retried request runs the call once.

A client that lost the answer (a dropped connection, a timeout) sends the same
request with the same key again and gets the execution the first one made,
instead of running the tool again. Keys are per principal and kept 24 hours in
the shared cache (Redis in production). A key reused with other arguments is
refused; one whose first request is still being decided answers 409. A refused
request (404, 403, 422…) frees its key, so the corrected request can use it.

The key is bound to the execution the moment the call is admitted, before the
tool can run (``Claim.admitted``, called by the pipeline): from then on the key
never frees itself. A retry replays that execution as it is, whatever happens
to the first request afterwards: an error while it runs or waits, or a web
process that dies mid-call (the reaper then fails the execution, and the retry
replays the failure). A key whose request died before admission (nothing ran)
frees itself after ``DECIDING_TTL_SECONDS``.

How long the caller waits (``wait``) is not part of the request: a retry that
waits longer is the same call. When the shared cache cannot be reached, a
request with a key is refused (503 ``idempotency_unavailable``) rather than run
without the guarantee the client asked for; sent without the key, it runs.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache

from toolhub.exceptions import Conflict, InvalidInput, ToolHubError

logger = logging.getLogger(__name__)

TTL_SECONDS = 24 * 3600
# How long a key is held while its first request is decided (authorization,
# validation, limits: no tool runs before admission binds the key for good).
DECIDING_TTL_SECONDS = 300
HEADER = "Idempotency-Key"
KEY_PATTERN = r"^[A-Za-z0-9._:+/=-]{1,200}$"
_KEY = re.compile(KEY_PATTERN)


@dataclass
class Claim:
    """This request's hold on a key: ``replay`` is the earlier execution's id, if any;
    ``execution_id`` the one this request's admitted call made."""

    cache_key: str | None
    fingerprint: str
    replay: str | None = None
    execution_id: str | None = None

    def admitted(self, execution) -> None:
        """Bind the key to ``execution``, written and about to run: retries replay it."""
        self.execution_id = str(execution.pk)
        if self.cache_key is None:
            return
        record = {"fingerprint": self.fingerprint, "execution_id": self.execution_id}
        try:
            cache.set(self.cache_key, record, TTL_SECONDS)
        except Exception as exc:
            logger.warning("idempotency key not kept: %s", exc.__class__.__name__)


def _arguments(value: Any) -> Any:
    """Arguments given as JSON text are the same call as the object (models send both)."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return parsed if isinstance(parsed, dict) else value
    return value


class IdempotencyUnavailable(ToolHubError):
    status_code = 503
    code = "idempotency_unavailable"


# How the caller waits for the answer, not what it asks for.
NOT_PART_OF_THE_CALL = ("wait",)


def _fingerprint(body: Any) -> str:
    if isinstance(body, dict):
        body = {k: _arguments(v) for k, v in body.items() if k not in NOT_PART_OF_THE_CALL}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def claim(user, key: str | None, body: Any) -> Claim:
    """Take ``key`` for this request, or say which execution an earlier one made."""
    if key is None:
        return Claim(None, "")
    if not _KEY.match(key):
        raise InvalidInput(
            f"{HEADER} must be 1 to 200 letters, digits or ._:+/=- characters.",
            details=[{"field": HEADER, "message": "Not a usable key.", "code": "invalid"}],
        )
    digest = hashlib.sha256(key.encode()).hexdigest()
    cache_key = f"toolhub:idempotency:{user.pk}:{digest}"
    fingerprint = _fingerprint(body)
    try:
        if cache.add(cache_key, {"fingerprint": fingerprint}, DECIDING_TTL_SECONDS):
            return Claim(cache_key, fingerprint)
        held = cache.get(cache_key)
    except Exception as exc:  # the cache is down: the promise cannot be kept
        logger.warning("idempotency keys unavailable: %s", exc.__class__.__name__)
        raise IdempotencyUnavailable(
            f"{HEADER} cannot be honoured now: the shared cache is unreachable. Retry "
            "later, or send the request without the key to run it regardless."
        ) from None
    if held is None:  # expired meanwhile: take it again
        return claim(user, key, body)
    if held.get("fingerprint") != fingerprint:
        raise InvalidInput(
            f"This {HEADER} was used with another request; use a new key for a new call.",
            code="idempotency_key_reused",
            details=[{"field": HEADER, "message": "Used with other arguments.", "code": "reused"}],
        )
    if not held.get("execution_id"):
        raise Conflict(
            f"A request with this {HEADER} is still being decided; try again in a moment.",
            code="idempotency_key_in_progress",
        )
    return Claim(None, fingerprint, replay=held["execution_id"])


def release(claim_: Claim) -> None:
    """Free the key of a request that ended before its call was admitted (refused,
    or failed before the tool could run); a key bound to an execution stays."""
    if claim_.cache_key is None or claim_.execution_id is not None:
        return
    try:
        cache.delete(claim_.cache_key)
    except Exception as exc:
        logger.warning("idempotency key not freed: %s", exc.__class__.__name__)


__all__ = ["HEADER", "Claim", "IdempotencyUnavailable", "claim", "release"]
