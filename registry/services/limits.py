"""Writes to rate-limit rules, each audited."""

from __future__ import annotations

from django.db import transaction

from registry.models import RateLimitRule, Tool
from registry.policy import policy_check
from registry.services.audit import audit_record
from registry.services.validation import full_clean

FIELDS = ("scope", "max_requests", "time_window_seconds", "is_active", "description")


def rule_snapshot(rule: RateLimitRule) -> dict:
    return {
        "id": str(rule.pk),
        "tool_id": str(rule.tool_id) if rule.tool_id else None,
        "tool": rule.tool.name if rule.tool_id else "*",
        **{field: getattr(rule, field) for field in FIELDS},
    }


def _loosens(before: dict, after: dict) -> bool:
    """Whether a rule may let more calls through than it did: switched off, more calls,
    counted for other callers (another scope), or any other window. Counters are kept
    per rule, scope and window start (``executions.services.governance``): a new
    window, even a longer one, starts from zero, so only fewer calls in the same
    window is a tightening."""
    if not before["is_active"]:
        return False
    return (
        not after["is_active"]
        or after["max_requests"] > before["max_requests"]
        or after["time_window_seconds"] != before["time_window_seconds"]
        or after["scope"] != before["scope"]
    )


@transaction.atomic
def rate_limit_create(*, actor, tool: Tool | None = None, **data) -> RateLimitRule:
    unknown = set(data) - set(FIELDS)
    if unknown:
        raise TypeError(f"unknown rate-limit fields: {sorted(unknown)}")
    policy_check(actor=actor, action="rate_limit.write", tool=tool)
    rule = RateLimitRule(tool=tool, **data)
    if getattr(actor, "pk", None):
        rule.created_by = actor
    full_clean(rule, exclude=["tool", "created_by"])
    rule.save()
    audit_record(actor=actor, action="rate_limit.created", target=rule, after=rule_snapshot(rule))
    return rule


@transaction.atomic
def rate_limit_update(*, actor, rule: RateLimitRule, data: dict) -> RateLimitRule:
    unknown = set(data) - set(FIELDS)
    if unknown:
        raise TypeError(f"unknown rate-limit fields: {sorted(unknown)}")
    rule = (
        RateLimitRule.objects.select_for_update(of=("self",)).select_related("tool").get(pk=rule.pk)
    )
    before = rule_snapshot(rule)
    for field, value in data.items():
        setattr(rule, field, value)
    policy_check(
        actor=actor,
        action="rate_limit.write",
        tool=rule.tool,
        loosens=_loosens(before, rule_snapshot(rule)),
    )
    full_clean(rule, exclude=["tool", "created_by"])
    after = rule_snapshot(rule)
    if after != before:
        rule.save()
        audit_record(
            actor=actor, action="rate_limit.updated", target=rule, before=before, after=after
        )
    return rule


@transaction.atomic
def rate_limit_delete(*, actor, rule: RateLimitRule) -> None:
    snapshot = rule_snapshot(rule)
    policy_check(actor=actor, action="rate_limit.write", tool=rule.tool, loosens=rule.is_active)
    rule_id, rule_repr = str(rule.pk), str(rule)
    rule.delete()
    audit_record(
        actor=actor,
        action="rate_limit.deleted",
        target_type=RateLimitRule._meta.label_lower,
        target_id=rule_id,
        target_repr=rule_repr,
        before=snapshot,
    )
