"""Writes to guards, each audited; who may make them is ``registry.policy``'s (guards are
governance policy: platform admins, and never an agent loosening one over its own calls)."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from registry.guard_configs import default_stage, guard_problems
from registry.models import Guard, Tool
from registry.policy import policy_check
from registry.services.audit import audit_record
from registry.services.validation import full_clean, raise_invalid
from toolhub.exceptions import Conflict

FIELDS = ("name", "kind", "stage", "action", "order", "config", "is_active", "description")


def guard_snapshot(guard: Guard) -> dict:
    return {
        "id": str(guard.pk),
        "tool_id": str(guard.tool_id) if guard.tool_id else None,
        "tool": guard.tool.name if guard.tool_id else "*",
        **{field: getattr(guard, field) for field in FIELDS},
    }


def _check(guard: Guard) -> None:
    full_clean(guard, exclude=["tool", "created_by", "config"])
    problems = guard_problems(
        kind=guard.kind, stage=guard.stage, action=guard.action, config=guard.config
    )
    if problems:
        raise_invalid(problems)


def _save(guard: Guard) -> None:
    try:
        with transaction.atomic():
            guard.save()
    except IntegrityError:
        raise Conflict(
            f"A guard named '{guard.name}' already exists.", code="guard_name_taken"
        ) from None


def _unknown(data: dict) -> None:
    unknown = set(data) - set(FIELDS)
    if unknown:
        raise TypeError(f"unknown guard fields: {sorted(unknown)}")


# What a guard's check is: any change of these may let a call through it did not.
_CHECK_FIELDS = ("kind", "stage", "action", "order", "config")


def _loosens(before: dict, after: dict) -> bool:
    """Whether a change of an active guard may let calls through: switched off, or its
    check changed (only switching it on, renaming and describing it never do)."""
    if not before["is_active"]:
        return False
    return not after["is_active"] or any(before[f] != after[f] for f in _CHECK_FIELDS)


@transaction.atomic
def guard_create(*, actor, tool: Tool | None = None, **data) -> Guard:
    """A new guard; ``stage`` defaults to the one its kind (or function) runs at."""
    _unknown(data)
    policy_check(actor=actor, action="guard.write", tool=tool)
    data.setdefault("config", {})
    if not data.get("stage"):
        data["stage"] = default_stage(data.get("kind", ""), data["config"]) or ""
    guard = Guard(tool=tool, **data)
    if getattr(actor, "pk", None):
        guard.created_by = actor
    _check(guard)
    _save(guard)
    audit_record(actor=actor, action="guard.created", target=guard, after=guard_snapshot(guard))
    return guard


@transaction.atomic
def guard_update(*, actor, guard: Guard, data: dict) -> Guard:
    _unknown(data)
    guard = Guard.objects.select_for_update(of=("self",)).select_related("tool").get(pk=guard.pk)
    before = guard_snapshot(guard)
    for field, value in data.items():
        setattr(guard, field, value)
    if "kind" in data and "stage" not in data:
        guard.stage = default_stage(guard.kind, guard.config) or guard.stage
    after = guard_snapshot(guard)
    policy_check(
        actor=actor, action="guard.write", tool=guard.tool, loosens=_loosens(before, after)
    )
    _check(guard)
    if after != before:
        _save(guard)
        audit_record(actor=actor, action="guard.updated", target=guard, before=before, after=after)
    return guard


@transaction.atomic
def guard_delete(*, actor, guard: Guard) -> None:
    snapshot = guard_snapshot(guard)
    policy_check(actor=actor, action="guard.write", tool=guard.tool, loosens=guard.is_active)
    guard_id, guard_repr = str(guard.pk), str(guard)
    guard.delete()
    audit_record(
        actor=actor,
        action="guard.deleted",
        target_type=Guard._meta.label_lower,
        target_id=guard_id,
        target_repr=guard_repr,
        before=snapshot,
    )
