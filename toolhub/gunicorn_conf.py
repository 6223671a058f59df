"""gunicorn settings for ToolHub's web process (``--config python:toolhub.gunicorn_conf``).

With several workers, Prometheus counters live in files under
``PROMETHEUS_MULTIPROC_DIR`` (see ``toolhub.metrics``); a worker that exits must be
marked dead so its live gauges stop counting. Command-line options still apply.
"""

from __future__ import annotations

import os


def child_exit(server, worker) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
