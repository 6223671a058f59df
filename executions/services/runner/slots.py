"""Concurrency slots of a call about to run, and the fields that say who runs it."""

from __future__ import annotations

import socket
from datetime import timedelta

from executions.models import Execution, ExecutionStatus
from executions.services import concurrency
from executions.services.budget import REAP_GRACE_SECONDS, total_budget_seconds
from registry.models import Tool

WORKER_NAME = socket.gethostname()


def take_slots(execution: Execution, tool: Tool) -> list[str] | None:
    """The concurrency slots a call about to run here needs (None: one is full)."""
    return concurrency.acquire_slots(
        execution, tool, lease=total_budget_seconds(tool) + REAP_GRACE_SECONDS
    )


def release_slots(execution: Execution, slots: list[str]) -> None:
    for key in slots:
        concurrency.release(key, str(execution.pk))


def mark_running(execution: Execution, tool: Tool, now) -> None:
    """Set an execution's claim fields: this process runs it from ``now``."""
    execution.status = ExecutionStatus.RUNNING
    execution.started_at = now
    execution.deadline_at = now + timedelta(seconds=total_budget_seconds(tool) + REAP_GRACE_SECONDS)
    execution.worker = WORKER_NAME[:200]
