"""Celery's routine lines about the periodic housekeeping tasks stay out of the logs."""

from __future__ import annotations

import logging

import toolhub.celery  # noqa: F401  (installs the filters, as the worker and beat do)


def test_housekeeping_routine_lines_are_dropped_and_everything_else_kept(caplog):
    caplog.set_level(logging.INFO)
    trace = logging.getLogger("celery.app.trace")
    trace.info("Task %s[%s] succeeded in %ss: %r", "registry.seal_audit", "a1", 0.002, 0)
    logging.getLogger("celery.worker.strategy").info("Task registry.seal_audit[a1] received")
    logging.getLogger("celery.beat").info(
        "Scheduler: Sending due task seal-audit-log (registry.seal_audit)"
    )
    trace.info("Task %s[%s] succeeded in %ss: %r", "executions.run", "b2", 0.2, None)
    trace.error("Task %s[%s] raised unexpected: %r", "registry.seal_audit", "c3", "boom")
    messages = [record.getMessage() for record in caplog.records]
    assert messages == [
        "Task executions.run[b2] succeeded in 0.2s: None",
        "Task registry.seal_audit[c3] raised unexpected: 'boom'",
    ]
