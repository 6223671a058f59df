"""Writing audit events. Services call ``audit_record`` inside their own transaction."""

from __future__ import annotations

import datetime
import decimal
import uuid
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from registry.models import AuditEvent
from registry.services.audit_auth import MAC_FIELDS, event_mac
from toolhub import context
from toolhub.rows import writer_for

# Audit events are written on every governed call: one prepared INSERT shape.
ROWS = writer_for(AuditEvent)


def json_safe(value: Any) -> Any:
    """Make a snapshot value storable in a JSON column."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [json_safe(v) for v in value]
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    return value


def actor_label(actor) -> str:
    if actor is None:
        return "system"
    return getattr(actor, "get_username", lambda: str(actor))() or str(actor)


def audit_record(
    *,
    actor,
    action: str,
    target=None,
    target_type: str | None = None,
    target_id: str | None = None,
    target_repr: str | None = None,
    before: dict | None = None,
    after: dict | None = None,
) -> AuditEvent:
    """Append one audit event carrying the current request id and client address."""
    event = audit_event(
        actor=actor,
        action=action,
        target=target,
        target_type=target_type,
        target_id=target_id,
        target_repr=target_repr,
        before=before,
        after=after,
    )
    ROWS.insert(event)
    audit_written()
    return event


def audit_event(
    *,
    actor,
    action: str,
    target=None,
    target_type: str | None = None,
    target_id: str | None = None,
    target_repr: str | None = None,
    before: dict | None = None,
    after: dict | None = None,
) -> AuditEvent:
    """The audit event ``audit_record`` would append, unsaved (for writers that batch it)."""
    ctx = context.current()
    if target is not None:
        target_type = target_type or target._meta.label_lower
        target_id = target_id or str(target.pk)
        target_repr = target_repr or str(target)
    real_actor = actor if getattr(actor, "is_authenticated", False) and actor.pk else None
    event = AuditEvent(
        # Both set here, not by the INSERT: the MAC covers them.
        uid=uuid.uuid4(),
        occurred_at=timezone.now(),
        actor=real_actor,
        actor_ref=real_actor.pk if real_actor is not None else None,
        actor_name=actor_label(real_actor),
        action=action,
        target_type=target_type or "",
        target_id=target_id or "",
        target_repr=(target_repr or "")[:200],
        before=json_safe(before) if before is not None else None,
        after=json_safe(after) if after is not None else None,
        request_id=ctx.request_id,
        client_address=ctx.client_address,
    )
    event.mac = event_mac({name: getattr(event, name) for name in MAC_FIELDS})
    return event


def audit_written() -> None:
    """Call after writing audit events yourself (``audit_event`` + a batched INSERT)."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        # Embedded mode has no beat: seal right after the commit instead, once per
        # transaction however many events it writes.
        connection = transaction.get_connection()
        if connection.in_atomic_block and any(
            entry[1] is _seal_now for entry in connection.run_on_commit
        ):
            return
        transaction.on_commit(_seal_now)


def _seal_now() -> None:
    from datetime import timedelta

    from registry.services.audit_chain import audit_seal_all

    try:
        audit_seal_all(grace=timedelta(0))
    except Exception:  # sealing later is fine; never fail the request that wrote the event
        import logging

        logging.getLogger(__name__).exception("sealing the audit log failed")
