"""Celery tasks: thin adapters that take an id and call a service."""

from __future__ import annotations

from celery import shared_task

from executions.services import runner
from toolhub import context


@shared_task(
    name="executions.run",
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
    from executions.services.approvals import approvals_expire

    return approvals_expire()


@shared_task(name="executions.deliver_webhook", ignore_result=True, max_retries=3)
def deliver_webhook(execution_id: str) -> bool:
    from executions.services.webhooks import deliver

    return deliver(execution_id)
