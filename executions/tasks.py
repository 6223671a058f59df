"""Celery tasks: thin adapters that take an id and call a service."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import celeryd_after_setup
from django.conf import settings

from executions.mcp_resync import mcp_servers_resync_due
from executions.services import runner, task_queue, webhooks
from executions.services.approvals import approvals_expire
from toolhub import context

logger = logging.getLogger(__name__)


# Sent by these names from executions.services.task_queue (which cannot import this module).
@shared_task(
    name=task_queue.RUN_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def run_execution(execution_id: str, request_id: str = "") -> None:
    # Audit events written by the worker carry the id of the request that admitted the call.
    with context.bind(request_id=request_id or f"task-{execution_id}"):
        runner.execution_run(execution_id=execution_id)


@shared_task(name="executions.reap", ignore_result=True)
def reap_executions() -> dict:
    return runner.executions_reap()


@shared_task(name="executions.expire_approvals", ignore_result=True)
def expire_approvals() -> int:
    return approvals_expire()


WEBHOOK_RETRY_SECONDS = (10, 60, 300)


@shared_task(
    name=task_queue.WEBHOOK_TASK,
    bind=True,
    ignore_result=True,
    max_retries=len(WEBHOOK_RETRY_SECONDS),
)
def deliver_webhook(self, execution_id: str) -> str:
    """Tell the agent; failures worth it are tried again after 10 s, 1 min and 5 min.

    In-process (embedded), there is one attempt: a retry would hold the request.
    """
    retries = self.request.retries or 0
    last = self.request.is_eager or retries >= self.max_retries
    outcome = webhooks.deliver(execution_id, attempt=retries + 1, last_attempt=last)
    if outcome == webhooks.RETRY:
        raise self.retry(countdown=WEBHOOK_RETRY_SECONDS[retries])
    return outcome


@celeryd_after_setup.connect
def warn_without_sandbox(sender, instance, **kwargs) -> None:
    """A worker consuming the ``command`` queue on a host that cannot sandbox says so at
    start (each call it takes is refused, naming what is missing)."""
    from executions.executors.command import sandbox_problem

    queues = getattr(instance.app.amqp.queues, "consume_from", None) or {}
    if "command" not in queues or not settings.TOOLHUB_COMMAND_ALLOWLIST:
        return
    problem = sandbox_problem()
    if problem:
        logger.error("command tools cannot run on this worker: %s", problem)


@shared_task(name="executions.resync_mcp_servers", ignore_result=True)
def resync_mcp_servers() -> dict:
    return mcp_servers_resync_due()
