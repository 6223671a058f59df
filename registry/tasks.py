"""Periodic registry tasks: thin adapters around services."""

from __future__ import annotations

from celery import shared_task
from oauth2_provider.models import clear_expired

from registry.services.audit_chain import audit_seal_all
from registry.services.verification_runs import verification_run


@shared_task(name="registry.seal_audit", ignore_result=True)
def seal_audit() -> int:
    return audit_seal_all()


@shared_task(name="registry.clear_expired_oauth_tokens", ignore_result=True)
def clear_expired_oauth_tokens() -> None:
    """Expired OAuth tokens and codes out of the database (the toolkit's clear_expired):
    a revoked or expired token is refused either way; this keeps the tables small."""
    clear_expired()


@shared_task(name="registry.verify_audit_log", ignore_result=True)
def verify_audit_log(run_id: int) -> None:
    verification_run(run_id=run_id)
