"""The reaper: ends executions a dead worker (or a process that could not record their
end) left ``running`` and re-queues admitted ones whose task was lost before it started."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from executions.models import Execution, ExecutionStatus
from executions.services import notify, task_queue, transitions

logger = logging.getLogger(__name__)
REQUEUE_AFTER_SECONDS = 60


def executions_reap(*, now=None) -> dict[str, int]:
    """End executions whose worker died, and re-queue admitted ones whose task was lost."""
    now = now or timezone.now()
    failed = 0
    for execution in Execution.objects.filter(
        status=ExecutionStatus.RUNNING, deadline_at__lt=now
    ).only("pk"):
        ended = transitions.execution_move(
            execution.pk,
            from_statuses=[ExecutionStatus.RUNNING],
            to=ExecutionStatus.FAILED,
            where={"deadline_at__lt": now},
            error_type="worker_lost",
            # A worker that died, or a process (a worker, or the web process running a
            # waited-for call) that could not write the end: no database connection.
            error_message=(
                "The process running this execution stopped, or could not record its "
                "end, before it finished."
            ),
            finished_at=now,
            sealed_secrets="",  # not charged back: the tool may have run
        )
        if ended is None:
            notify.notify_done(execution.pk)
        failed += ended is not None
    requeued = 0
    stale = now - timedelta(seconds=REQUEUE_AFTER_SECONDS)
    for execution in (
        Execution.objects.filter(status=ExecutionStatus.QUEUED, queued_at__lt=stale)
        .filter(Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=stale))
        .select_related("tool")
    ):
        if not task_queue.enqueue(execution, execution.tool):
            break  # the broker does not answer: the next round tries again
        Execution.objects.filter(pk=execution.pk, status=ExecutionStatus.QUEUED).update(
            queued_at=now
        )
        requeued += 1
    if failed or requeued:
        logger.warning(
            "reaper: %d execution(s) failed as worker_lost, %d re-queued", failed, requeued
        )
    return {"failed": failed, "requeued": requeued}
