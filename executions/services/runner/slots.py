"""Concurrency slots of a call about to run, and the fields that say who runs it."""

from __future__ import annotations

import secrets
import socket
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from executions.models import Execution
from executions.services import concurrency
from executions.services.budget import REAP_GRACE_SECONDS, total_budget_seconds
from registry.models import Tool

WORKER_NAME = socket.gethostname()


@dataclass(frozen=True)
class Slots:
    """The concurrency slots one claim took (``keys``), held as ``holder``."""

    holder: str
    keys: tuple[str, ...]


def take_slots(execution: Execution, tool: Tool) -> Slots | None:
    """The concurrency slots a call about to run here needs (None: one is full).

    Each claim holds them under a name of its own: a slot is re-entrant for its
    holder, so two claimers of one call sharing a name would count once, and the
    one that loses the claim would free the winner's slot as it leaves.
    """
    holder = f"{execution.pk}/{secrets.token_hex(4)}"
    keys = concurrency.acquire_slots(
        holder, tool, lease=total_budget_seconds(tool) + REAP_GRACE_SECONDS
    )
    return None if keys is None else Slots(holder, tuple(keys))


def release_slots(slots: Slots) -> None:
    for key in slots.keys:
        concurrency.release(key, slots.holder)


def claim_fields(execution: Execution, tool: Tool, now) -> dict[str, Any]:
    """The fields a claim writes: this process runs the call from ``now``."""
    return {
        "started_at": now,
        "deadline_at": now + timedelta(seconds=total_budget_seconds(tool) + REAP_GRACE_SECONDS),
        "worker": WORKER_NAME[:200],
        # As read: a beat another task wrote meanwhile would differ from the row the
        # finish event hashes (content version 3).
        "heartbeat_at": execution.heartbeat_at,
    }
