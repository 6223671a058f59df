"""Guards: ordered checks around every call, for one tool or for all tools.

A guard runs *before* a call (it sees the validated arguments; when its check
matches, the call is denied or waits for approval) or *after* it (it sees the
output; what it finds is redacted, the output is blocked, or the result is
flagged). Which check runs is the guard's ``kind``: a built-in one (PII,
secret-shaped strings, argument rules, instructions in outputs) or an
operator's Python function (``python``). The checks themselves live in
``executions.guards``; these rows are the policy, written by platform admins
through ``registry.services.guards`` (audited).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.validators import MaxValueValidator, RegexValidator
from django.db import models

from registry.models.tools import Tool

guard_name_validator = RegexValidator(
    r"^[a-zA-Z0-9_-]{1,64}$",
    "Use 1 to 64 characters: letters, digits, '_' or '-'.",
    code="invalid_name",
)


class GuardStage(models.TextChoices):
    """When a guard runs: on the arguments before the call, or on the output after it."""

    BEFORE = "before", "Before the call (arguments)"
    AFTER = "after", "After the call (output)"


class GuardKind(models.TextChoices):
    """Which check a guard runs (``executions.guards.builtins`` or an operator's function)."""

    PII = "pii", "Personal data in the output"
    SECRETS = "secrets", "Secret-shaped strings in the output"
    ARGUMENTS = "arguments", "Argument rules (condition, sizes)"
    INJECTION = "injection", "Instructions in the output (heuristic)"
    PYTHON = "python", "Operator's Python function"


class GuardAction(models.TextChoices):
    """What happens when a guard's check matches.

    Before a call: ``deny`` (a refusal the agent can act on) or
    ``require_approval`` (the call waits for a person). After it: ``redact``
    (what was found is replaced), ``block`` (the output is withheld and the call
    fails) or ``flag`` (the output is kept and the result says what was found).
    """

    DENY = "deny", "Deny the call"
    REQUIRE_APPROVAL = "require_approval", "Require approval"
    REDACT = "redact", "Redact what was found"
    BLOCK = "block", "Block the output"
    FLAG = "flag", "Flag the result"


# The stage each built-in kind runs at (a python guard's stage is its function's).
KIND_STAGE = {
    GuardKind.PII: GuardStage.AFTER,
    GuardKind.SECRETS: GuardStage.AFTER,
    GuardKind.INJECTION: GuardStage.AFTER,
    GuardKind.ARGUMENTS: GuardStage.BEFORE,
}
STAGE_ACTIONS = {
    GuardStage.BEFORE: (GuardAction.DENY, GuardAction.REQUIRE_APPROVAL),
    GuardStage.AFTER: (GuardAction.REDACT, GuardAction.BLOCK, GuardAction.FLAG),
}


class Guard(models.Model):
    """One check around calls: of one tool, or of every tool when ``tool`` is empty.

    Guards of a stage run in ``order`` (then name), the all-tools ones and the
    tool's own together; a before-guard that denies stops the others. ``config``
    is the kind's settings (``docs/governance.md``, "Guards").
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=64, unique=True, validators=[guard_name_validator])
    tool = models.ForeignKey(
        Tool,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="guards",
        help_text="Empty: every tool.",
    )
    kind = models.CharField(max_length=16, choices=GuardKind.choices)
    stage = models.CharField(
        max_length=8,
        choices=GuardStage.choices,
        blank=True,
        help_text="Empty: the stage its kind (or its function) runs at.",
    )
    action = models.CharField(max_length=20, choices=GuardAction.choices)
    order = models.PositiveIntegerField(
        default=100, validators=[MaxValueValidator(1_000_000)], help_text="Lower runs first."
    )
    config = models.JSONField(default=dict, blank=True)
    is_active = models.BooleanField(default=True)
    description = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["order", "name"]
        indexes = [models.Index(fields=["tool", "is_active"], name="guard_tool_idx")]

    def __str__(self) -> str:
        target = self.tool.name if self.tool_id else "all tools"
        return f"{self.name} ({self.kind}, {self.stage}, {self.action}) on {target}"


__all__ = [
    "KIND_STAGE",
    "STAGE_ACTIONS",
    "Guard",
    "GuardAction",
    "GuardKind",
    "GuardStage",
]
