"""Writes to toolsets (``/mcp/<slug>``), each audited with the tools before and after."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from registry.models import Tool, Toolset
from registry.policy import policy_check
from registry.services.audit import audit_record
from registry.services.validation import full_clean
from toolhub.exceptions import Conflict

FIELDS = ("name", "slug", "description", "is_active")


def toolset_snapshot(toolset: Toolset) -> dict:
    return {
        "id": str(toolset.pk),
        **{field: getattr(toolset, field) for field in FIELDS},
        "tools": sorted(toolset.tools.values_list("name", flat=True)),
    }


def _check_fields(data: dict) -> None:
    unknown = set(data) - set(FIELDS)
    if unknown:
        raise TypeError(f"unknown toolset fields: {sorted(unknown)}")


def _check_unique(toolset: Toolset) -> None:
    """A name or slug another toolset has: 409 naming the field (not a database error)."""
    others = Toolset.objects.exclude(pk=toolset.pk)
    for field in ("name", "slug"):
        value = getattr(toolset, field)
        if others.filter(**{field: value}).exists():
            raise Conflict(
                f"A toolset with {field} '{value}' already exists.",
                code="duplicate_name",
                details=[{"field": field, "message": "Already in use.", "code": "unique"}],
            )


@transaction.atomic
def toolset_create(*, actor, tools: Iterable[Tool] = (), **data) -> Toolset:
    policy_check(actor=actor, action="toolset.write")
    _check_fields(data)
    toolset = Toolset(**data)
    full_clean(toolset)
    _check_unique(toolset)
    toolset.save()
    toolset.tools.set(list(tools))
    audit_record(
        actor=actor, action="toolset.created", target=toolset, after=toolset_snapshot(toolset)
    )
    return toolset


@transaction.atomic
def toolset_update(
    *, actor, toolset: Toolset, data: dict, tools: Iterable[Tool] | None = None
) -> Toolset:
    policy_check(actor=actor, action="toolset.write")
    _check_fields(data)
    toolset = Toolset.objects.select_for_update().get(pk=toolset.pk)
    before = toolset_snapshot(toolset)
    for field, value in data.items():
        setattr(toolset, field, value)
    full_clean(toolset)
    _check_unique(toolset)
    toolset.save()
    if tools is not None:
        toolset.tools.set(list(tools))
    after = toolset_snapshot(toolset)
    if after != before:
        audit_record(
            actor=actor, action="toolset.updated", target=toolset, before=before, after=after
        )
    return toolset


@transaction.atomic
def toolset_delete(*, actor, toolset: Toolset) -> None:
    policy_check(actor=actor, action="toolset.write")
    snapshot = toolset_snapshot(toolset)
    toolset_id, toolset_repr = str(toolset.pk), str(toolset)
    toolset.delete()
    audit_record(
        actor=actor,
        action="toolset.deleted",
        target_type=Toolset._meta.label_lower,
        target_id=toolset_id,
        target_repr=toolset_repr,
        before=snapshot,
    )
