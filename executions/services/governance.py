"""Governance controls at admission: rate limits, the approval gate, the result cache."""

from __future__ import annotations

import hashlib
import logging
import math
import time
from dataclasses import dataclass

from django.core.cache import cache
from referencing.exceptions import Unresolvable

from executions.models import ApprovalReason
from executions.services.shared_state import SharedStateUnavailable, counter_incr
from executions.validation.patterns import PatternUndecided, condition_matches
from registry.models import RateLimitRule, Tool
from registry.models.limits import RateLimitScope
from registry.selectors import rate_limit_rules_for
from toolhub.exceptions import ToolHubError

logger = logging.getLogger(__name__)


class RateLimited(ToolHubError):
    status_code = 429
    code = "rate_limited"


class ControlsUnavailable(ToolHubError):
    status_code = 503
    code = "controls_unavailable"


@dataclass
class Quota:
    """The tightest rule's state after this call, for the X-RateLimit-* headers."""

    limit: int
    remaining: int
    reset_seconds: int

    def headers(self) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(max(self.remaining, 0)),
            "X-RateLimit-Reset": str(self.reset_seconds),
        }


def _subjects(rule: RateLimitRule, caller) -> list[str]:
    if rule.scope == RateLimitScope.GLOBAL:
        return ["all"]
    if rule.scope == RateLimitScope.AGENT:
        return [f"agent:{caller.agent.pk}" if caller.agent else f"user:{caller.user.pk}"]
    if rule.scope == RateLimitScope.USER:
        return [f"user:{caller.user.pk}"]
    role_ids = caller.role_ids if caller.role_ids is not None else caller.all_role_ids()
    return [f"role:{r}" for r in role_ids] or ["role:none"]


def rate_limit_admit(*, caller, tool: Tool, rules=None) -> Quota | None:
    """Count this call against every applicable rule; refuse it if any is full.

    Windows slide: the count is this fixed window's calls plus the previous
    window's, weighted by how much of it still lies within the last
    ``time_window_seconds`` (a fixed window alone let twice the limit through
    around a boundary). Counting is atomic in the shared store (one INCR per
    counter), so concurrent callers across processes never pass the limit
    together. A refused call gives its increments back so it does not use up
    the other rules' quota.
    """
    rules = rate_limit_rules_for(tool) if rules is None else rules
    if not rules:
        return None
    now = time.time()
    taken: list[tuple[str, int]] = []
    tightest: Quota | None = None
    try:
        for rule in rules:
            window = rule.time_window_seconds
            window_start = math.floor(now / window) * window
            reset = max(1, math.ceil(window_start + window - now))
            tool_part = str(tool.pk) if rule.tool_id else "any"
            # Of the previous window, the part still within the last `window` seconds.
            carried = (window_start + window - now) / window
            for subject in _subjects(rule, caller):
                prefix = f"toolhub:rl:{rule.pk}:{tool_part}:{subject}"
                key = f"{prefix}:{int(window_start)}"
                # Kept two windows: the next window reads this one as its previous.
                lifetime = 2 * window
                count, previous = counter_incr(
                    key, lifetime, read=f"{prefix}:{int(window_start - window)}"
                )
                taken.append((key, lifetime))
                # Rounded up: a governance limit errs on the side of refusing.
                remaining = rule.max_requests - count - math.ceil(previous * carried)
                quota = Quota(limit=rule.max_requests, remaining=remaining, reset_seconds=reset)
                if remaining < 0:
                    for taken_key, lifetime in taken:
                        counter_incr(taken_key, lifetime, delta=-1)
                    error = RateLimited(
                        f"Rate limit reached: {rule.max_requests} calls per {window} s "
                        f"({rule.get_scope_display().lower()}). Retry in {reset} s.",
                        details={
                            "limit": rule.max_requests,
                            "window_seconds": window,
                            "scope": rule.scope,
                        },
                    )
                    error.headers = {
                        **Quota(rule.max_requests, 0, reset).headers(),
                        "Retry-After": str(reset),
                    }
                    raise error
                if tightest is None or quota.remaining < tightest.remaining:
                    tightest = quota
    except SharedStateUnavailable as exc:
        if tool.is_high_risk:
            raise ControlsUnavailable(
                "Rate limits cannot be checked right now and this tool is high-risk: refused.",
            ) from exc
        logger.warning(
            "rate-limit store unavailable (%s); admitting a call to %s without counting it",
            exc,
            tool.name,
        )
        return None
    return tightest


# Approval gate


def approval_reason(tool: Tool, inputs: dict) -> str:
    """Why a call to ``tool`` with ``inputs`` waits for a person (an ``ApprovalReason``),
    or "" when it does not."""
    if not tool.requires_approval:
        return ""
    condition = tool.approval_condition or {}
    if not condition:
        return ApprovalReason.TOOL
    try:
        matched = condition_matches(condition, inputs)
    except PatternUndecided:
        # An argument made to backtrack must not slip past the condition: a person decides.
        logger.warning("tool %s: approval_condition pattern timed out", tool.pk)
        return ApprovalReason.CONDITION_UNUSABLE
    except Unresolvable:
        # A condition that cannot be evaluated (a reference stored before they were
        # refused) fails closed: the call waits for a person.
        logger.warning("tool %s: approval_condition cannot be evaluated", tool.pk)
        return ApprovalReason.CONDITION_UNUSABLE
    return ApprovalReason.CONDITION if matched else ""


# Result cache


def _guards_stamp(guards, caller: str) -> str:
    """Which after-guards (as last changed) shaped an output: an answer guarded otherwise
    (before a PII guard was added, say) is never served. An operator's after-guard sees
    who called (``context.caller``) and may guard one caller's answer otherwise than
    another's: with one, answers are kept per caller."""
    after = sorted(
        f"{g.pk}@{g.updated_at.isoformat() if g.updated_at else ''}"
        for g in guards
        if g.stage == "after"
    )
    if any(g.stage == "after" and g.kind == "python" for g in guards):
        after.append(f"caller={caller}")
    return hashlib.sha256("|".join(after).encode()).hexdigest()[:16] if after else "-"


def result_cache_key(tool: Tool, input_hash: str, guards=(), caller: str = "") -> str:
    """Results are kept per definition: any change of what a call does (the tool's
    run settings, parameters or configs) moves ``definition_changed_at``
    (``registry.services.tools``), so an answer produced under an older
    configuration (another base_url, say) is never served; and per set of after-guards
    (and per caller when an operator's after-guard is among them)."""
    changed = tool.definition_changed_at or tool.updated_at
    stamp = changed.isoformat() if changed else tool.version
    return f"toolhub:result:{tool.pk}:{stamp}:{_guards_stamp(guards, caller)}:{input_hash}"


def cached_result(tool: Tool, input_hash: str, guards=(), caller: str = "") -> dict | None:
    if not tool.cache_ttl_seconds:
        return None
    try:
        return cache.get(result_cache_key(tool, input_hash, guards, caller))
    except Exception as exc:
        logger.warning("result cache unavailable: %s", exc)
        return None


def store_result(tool: Tool, execution, guards=()) -> None:
    if not tool.cache_ttl_seconds or execution.status != "succeeded":
        return
    try:
        cache.set(
            result_cache_key(tool, execution.input_hash, guards, execution.principal_name),
            {
                "execution_id": str(execution.pk),
                "output_data": execution.output_data,
                "output_truncated": execution.output_truncated,
                "output_artifact": execution.output_artifact,
                "output_size": execution.output_size,
                "chars_out": execution.chars_out,
                "guard_decisions": [
                    d for d in execution.guard_decisions or [] if d.get("stage") == "after"
                ],
            },
            timeout=tool.cache_ttl_seconds,
        )
    except Exception as exc:
        logger.warning("could not cache result of %s: %s", execution.pk, exc)
