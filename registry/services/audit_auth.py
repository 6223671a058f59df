"""Authenticating audit events: an HMAC of each event's content, made when it is written.

The hash chain proves that sealed events were not altered, deleted, inserted
or moved since sealing; it cannot tell an event ToolHub wrote from one
inserted into the table by someone with database access, which the sealer
would then seal like any other. So every event is written with ``mac``:
HMAC-SHA256 under ``TOOLHUB_AUDIT_SIGNING_KEY`` (which the database does not
hold) of its content, including the id of its actor (``actor_ref``: the
``actor_id`` column is a foreign key a deleted user clears). The sealer
seals an event only when its MAC verifies, and once the chain holds an
authenticated event it seals none without one; ``audit_verify`` checks the
MAC of every event and names one that fails.

Version 2 MACs also cover the event's identity, ``uid``: a random UUID set
when the event is written (the id and the sequence do not exist yet then:
the id comes from the INSERT, the sequence from the sealer), unique in the
table. A row copied under a new id keeps the copied ``uid``, so the database
refuses it, and where the constraint was dropped the sealer refuses and
``audit_verify`` names the second event with one ``uid``; a copy given a
new ``uid`` no longer matches its MAC. Once the chain holds a version 2
event, the sealer refuses a version 1 one (no ``uid``), as it refuses an
event without a MAC once the chain holds one.

The chain's hashes are plain SHA-256: someone who deletes an event from the
middle can recompute every later hash. So the sealer also MACs each event's
place, its sequence and hash (``seal_mac``); every identified event must
carry a seal that verifies.

Events written before this existed carry no MAC: they stay as the chain
proved them. Keys rotate like the encryption keys: the first of the
comma-separated ``TOOLHUB_AUDIT_SIGNING_KEY`` signs, every one verifies.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from django.conf import settings

from registry.canonical import address_form, canonical_json, stored_form, time_form

MAC_FIELDS = (
    "uid",
    "occurred_at",
    "actor_ref",
    "actor_name",
    "action",
    "target_type",
    "target_id",
    "target_repr",
    "before",
    "after",
    "request_id",
    "client_address",
)


def signing_keys() -> list[bytes]:
    """The audit signing keys, the one that signs first."""
    raw = settings.TOOLHUB_AUDIT_SIGNING_KEY or ""
    return [key.strip().encode() for key in raw.split(",") if key.strip()]


def _content(row: dict[str, Any]) -> bytes:
    """The event's content in the form it has both when written and read back."""
    content = {name: row.get(name) for name in MAC_FIELDS}
    if content["uid"] is None:
        del content["uid"]  # version 1: the content as it was before identities
    else:
        content["uid"] = str(content["uid"])
    content["occurred_at"] = time_form(content["occurred_at"])
    content["client_address"] = address_form(content["client_address"])
    content["before"] = stored_form(content["before"])
    content["after"] = stored_form(content["after"])
    return canonical_json(content).encode("utf-8", "surrogatepass")


def event_mac(row: dict[str, Any]) -> str:
    """The MAC of an event (a dict of ``MAC_FIELDS``) under the signing key; "" without one."""
    return content_mac(_content(row))


def mac_valid(row: dict[str, Any]) -> bool:
    """Whether ``row["mac"]`` authenticates the row's content under one of the keys."""
    return content_mac_valid(_content(row), row.get("mac") or "")


def seal_mac(sequence: int, digest: str) -> str:
    """The sealer's MAC of an event's place in the chain: its sequence and hash (which
    covers the previous hash and the content). Without the key, a chain recomputed
    after deleting or inserting an event cannot be sealed again."""
    return content_mac(f"seal|{sequence}|{digest}".encode())


def seal_valid(sequence: int, digest: str, mac: str) -> bool:
    return content_mac_valid(f"seal|{sequence}|{digest}".encode(), mac)


def content_mac(content: bytes) -> str:
    """HMAC-SHA256 of ``content`` under the key that signs; "" without one."""
    keys = signing_keys()
    return hmac.new(keys[0], content, hashlib.sha256).hexdigest() if keys else ""


def content_mac_valid(content: bytes, mac: str) -> bool:
    """Whether one of the signing keys made ``mac`` of ``content`` (keys rotate)."""
    if not mac:
        return False
    return any(
        hmac.compare_digest(hmac.new(key, content, hashlib.sha256).hexdigest(), mac)
        for key in signing_keys()
    )
