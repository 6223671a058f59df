"""gunicorn settings for ToolHub's web process (``--config python:toolhub.gunicorn_conf``).

The web process serves the ASGI application, ``toolhub.asgi:application`` (Django
and the MCP endpoint), with uvicorn workers under gunicorn's process management
(restarts, graceful reloads, ``--workers``). Django runs each request's
synchronous code in a thread of its own, so a caller waiting on a tool does not
hold up the other requests of its worker.

With several workers, Prometheus counters live in files under
``PROMETHEUS_MULTIPROC_DIR`` (see ``toolhub.metrics``); a worker that exits must be
marked dead so its live gauges stop counting. Command-line options still apply.
"""

from __future__ import annotations

import os

worker_class = "uvicorn_worker.UvicornWorker"
# An agent's client keeps its connection between calls (the bench's clients do too).
keepalive = 75


def child_exit(server, worker) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
