"""How long one call may take, and the grace the reaper gives a worker past it."""

from __future__ import annotations

from registry.models import Tool

REAP_GRACE_SECONDS = 30


def total_budget_seconds(tool: Tool) -> float:
    """How long one call may take at most, retries and backoff included."""
    attempts = tool.max_retries + 1
    return tool.timeout_seconds * attempts + min(30.0, 2.0 * tool.max_retries)
