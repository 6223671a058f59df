"""Why a client's metadata document (its https ``client_id``) was last refused, kept a few
minutes: the fetcher (``executions.egress.cimd``) writes it, the consent page shows it
instead of the protocol's bare "unknown client"."""

from __future__ import annotations

import hashlib

from django.core.cache import cache

_KEY = "toolhub:cimd-refusal:{}"
KEEP_SECONDS = 300


def _key(client_id: str) -> str:
    return _KEY.format(hashlib.sha256(client_id.encode()).hexdigest())


def remember_refusal(client_id: str, reason: str) -> None:
    cache.set(_key(client_id), reason, KEEP_SECONDS)


def last_refusal(client_id: str) -> str | None:
    return cache.get(_key(client_id))
