"""The Celery application. Tasks live in each app's ``tasks.py``."""

import logging
import os

from celery import Celery
from celery.signals import (
    after_setup_logger,
    after_setup_task_logger,
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_process_shutdown,
)
from django.conf import settings

from toolhub import log_secrets, tracing
from toolhub.env import env_int

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings")

app = Celery("toolhub")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Celery's Django fixup closes the database connection after every task unless
# this (un-namespaced) key is set: a new PostgreSQL session per execution cost
# ~15 ms of CPU. Keep connections for this many tasks.
app.conf["CELERY_DB_REUSE_MAX"] = env_int("TOOLHUB_WORKER_DB_REUSE_MAX", 1000, minimum=0)
app.autodiscover_tasks()


class QuietHousekeeping(logging.Filter):
    """Drop Celery's routine INFO lines about the periodic housekeeping tasks
    (``settings.TOOLHUB_HOUSEKEEPING_TASKS``: sealing every 2 s, the reaper, approval
    expiry); warnings pass. Celery's own "sent", "received" and "succeeded" lines for
    them would be three INFO lines every two seconds."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.INFO:
            return True
        try:
            message = record.getMessage()
        except Exception:
            return True
        return not any(name in message for name in settings.TOOLHUB_HOUSEKEEPING_TASKS)


for _name in ("celery.beat", "celery.worker.strategy", "celery.app.trace"):
    logging.getLogger(_name).addFilter(QuietHousekeeping())


@task_prerun.connect
@task_postrun.connect
def _drop_unusable_connections(**kwargs) -> None:
    """What Django does around each request: a connection that broke (database
    restart, network cut) or outlived CONN_MAX_AGE is closed and reopened on next
    use, instead of failing every later task in this worker."""
    from django.db import close_old_connections

    close_old_connections()


# Traces (toolhub/tracing.py) start in each worker process after the fork, as the
# Celery instrumentation asks: a provider, its export thread and its connections
# made before the fork would be shared with, or lost to, the children.
@worker_process_init.connect(weak=False)
def _trace_worker_process(**kwargs) -> None:
    tracing.setup(service_name="toolhub-worker", web=False)


@worker_init.connect(weak=False)
def _size_worker_connections(sender=None, **kwargs) -> None:
    """A worker's connections are named ``toolhub-worker``; its pool holds
    ``TOOLHUB_WORKER_DB_POOL_SIZE`` per task running at once in a process: per child of
    the prefork (or solo) pool, which runs one task at a time; times ``--concurrency``
    for pools that run tasks in threads of one process. Runs before the fork, before
    any connection (docs/operations.md "Database connections")."""
    from toolhub.db import pool

    kind = getattr(getattr(sender, "pool_cls", None), "__module__", "")
    per_process = 1 if kind.endswith((".prefork", ".solo")) else getattr(sender, "concurrency", 1)
    pool.configure_process("worker", settings.TOOLHUB_WORKER_DB_POOL_SIZE * max(per_process, 1))


@worker_init.connect(weak=False)
def _trace_unforked_worker(sender=None, **kwargs) -> None:
    """Pools that do not fork (threads, gevent) send no worker_process_init."""
    pool = getattr(getattr(sender, "pool_cls", None), "__module__", "")
    if not pool.endswith((".prefork", ".solo")):
        tracing.setup(service_name="toolhub-worker", web=False)


@worker_process_shutdown.connect(weak=False)
def _flush_traces(**kwargs) -> None:
    # A pool process ends with os._exit: no atexit hook sends what is still batched.
    tracing.flush()


@after_setup_logger.connect(weak=False)
@after_setup_task_logger.connect(weak=False)
def _trace_ids_in_worker_logs(logger=None, **kwargs) -> None:
    """Celery's worker replaces the root logger's handlers: its records get the trace id
    (the format names it when traces are on, settings.CELERY_WORKER_*LOG_FORMAT), and
    lose the secrets of the call being run (``toolhub.log_secrets``)."""
    for handler in getattr(logger, "handlers", ()):
        handler.addFilter(tracing.TraceLogFilter())
        handler.addFilter(log_secrets.SecretsLogFilter())
