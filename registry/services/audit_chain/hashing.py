"""What an audit event's hash covers and how it is computed."""

from __future__ import annotations

import hashlib

from registry.canonical import canonical_json, time_form

GENESIS = "0" * 64
CONTENT_FIELDS = (
    "id",
    "occurred_at",
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


# What the walk and the sealer read of each event besides its content.
AUTH_FIELDS = ("mac", "actor_ref", "actor_id", "uid", "seal_mac")


def canonical_content(row: dict, sequence: int) -> str:
    content = {name: row[name] for name in CONTENT_FIELDS}
    content["occurred_at"] = time_form(row["occurred_at"])
    content["sequence"] = sequence
    if row.get("mac"):  # an authenticated event: its MAC and actor id are chained too
        content["mac"] = row["mac"]
        content["actor_ref"] = row.get("actor_ref")
    if row.get("uid") is not None:  # an identified event (MAC version 2): its identity too
        content["uid"] = str(row["uid"])
    return canonical_json(content)


def event_hash(prev_hash: str, row: dict, sequence: int) -> str:
    digest = hashlib.sha256()
    digest.update(prev_hash.encode())
    digest.update(b"|")
    digest.update(canonical_content(row, sequence).encode())
    return digest.hexdigest()
