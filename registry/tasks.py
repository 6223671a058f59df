"""Periodic registry tasks: thin adapters around services."""

from __future__ import annotations

from celery import shared_task

from registry.services.audit_chain import audit_seal_all
from registry.services.verification_runs import verification_run


@shared_task(name="registry.seal_audit", ignore_result=True)
def seal_audit() -> int:
    return audit_seal_all()


@shared_task(name="registry.verify_audit_log", ignore_result=True)
def verify_audit_log(run_id: int) -> None:
    verification_run(run_id=run_id)
