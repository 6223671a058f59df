"""The task queue: the only module that sends Celery tasks.

Everything that puts work on the workers comes here: the dispatch of an admitted
call (``dispatch``), a call approved by a human (``approvals``), the runner's
re-queue of a call waiting for a concurrency slot and the reaper's re-send of a
call whose task was lost (``runner``), and the webhook that tells an agent a call
ended (``notify_agent``). It sits below all of them and imports none of them.

Tasks are sent by the names ``executions.tasks`` registers them under
(``RUN_TASK``, ``WEBHOOK_TASK``), so no service imports ``executions.tasks``: the
tasks import the services, never the other way round. ``send_task`` ignores
``task_always_eager``, so in-process (embedded) the registered task is applied
instead; its own ``apply_async`` runs it in this thread then.
"""

from __future__ import annotations

import logging

from django.db import transaction
from kombu.exceptions import OperationalError as KombuOperationalError

from executions.models import Execution
from executions.services import webhooks
from executions.services.budget import total_budget_seconds
from registry.models import Tool
from toolhub.celery import app

logger = logging.getLogger(__name__)
RUN_TASK = "executions.run"
WEBHOOK_TASK = "executions.deliver_webhook"
BROKER_ERRORS = (KombuOperationalError, OSError)


def tasks_run_here() -> bool:
    return bool(app.conf.task_always_eager)


def _send(name: str, **options) -> None:
    """Publish the task registered as ``name`` (applied here when tasks run in-process)."""
    task = app.tasks[name]
    task.apply_async(**options)


def enqueue(execution: Execution, tool: Tool) -> bool:
    """Publish the task that runs ``execution``; False when the broker did not take it
    (in time: settings.TOOLHUB_REDIS_TIMEOUT). Never raises for an unreachable broker."""
    budget = total_budget_seconds(tool)
    try:
        _send(
            RUN_TASK,
            args=[str(execution.pk), execution.request_id],
            queue=tool.type,
            soft_time_limit=budget + 5,
            time_limit=budget + 15,
        )
    except BROKER_ERRORS as exc:
        logger.warning(
            "broker unreachable (%s): execution %s not sent to the workers",
            type(exc).__name__,
            execution.pk,
        )
        return False
    return True


def requeue(execution: Execution, tool: Tool, countdown: float) -> bool:
    """Send a call waiting for a concurrency slot back to the workers in ``countdown``
    seconds; False when tasks run in-process (nobody else would pick it up)."""
    if tasks_run_here():
        return False
    _send(
        RUN_TASK,
        args=[str(execution.pk), execution.request_id],
        queue=tool.type,
        countdown=countdown,
    )
    return True


def notify_agent(execution: Execution) -> None:
    """Queue the webhook (``WEBHOOK_TASK``, which calls ``webhooks.deliver``) after
    commit when the call's agent has one."""
    agent = execution.agent
    if agent is None or not agent.webhook_url:
        return
    transaction.on_commit(lambda: _queue_delivery(execution))


def _queue_delivery(execution: Execution) -> None:
    """Publish the delivery task; a broker that cannot take it (in time) costs the
    webhook, recorded as failed, never the request that ended the call."""
    try:
        app.tasks[WEBHOOK_TASK].delay(str(execution.pk))
    except BROKER_ERRORS as exc:
        logger.warning("webhook for execution %s not queued: %s", execution.pk, exc)
        webhooks.delivery_audit(
            execution, ok=False, attempt=0, problem=f"not queued: {exc.__class__.__name__}"
        )
