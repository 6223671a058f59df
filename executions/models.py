"""Execution records: one immutable row per call of a tool, admitted or not."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models

from registry.models import Agent, Tool


class ExecutionStatus(models.TextChoices):
    """Where a call is in its life.

    State machine (every transition is a conditional UPDATE that claims the row)::

        (admitted) ─► pending_approval ─► queued ─► running ─► succeeded
                            │  │  │          │  │       └────► failed
                            │  │  │          │  └► cancelled | denied | failed
                            │  │  └► rejected | expired        (queue timeout)
                            │  └► cancelled
                            └► denied (the agent or tool was stopped meanwhile)
        (refused at admission) ─► denied | invalid
        (answered from the result cache) ─► succeeded

    ``succeeded``, ``failed``, ``denied``, ``invalid``, ``rejected``,
    ``expired`` and ``cancelled`` are terminal: the row never changes again.
    On PostgreSQL a trigger holds every row to this (``STATUS_TRANSITIONS``,
    migration 0006): an UPDATE that skips a step, such as a call waiting for
    approval set straight to ``succeeded``, is refused.
    """

    PENDING_APPROVAL = "pending_approval", "Pending approval"
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    DENIED = "denied", "Denied"
    INVALID = "invalid", "Invalid input"
    REJECTED = "rejected", "Rejected"
    EXPIRED = "expired", "Expired"
    CANCELLED = "cancelled", "Cancelled"


TERMINAL_STATUSES = frozenset(
    {
        ExecutionStatus.SUCCEEDED,
        ExecutionStatus.FAILED,
        ExecutionStatus.DENIED,
        ExecutionStatus.INVALID,
        ExecutionStatus.REJECTED,
        ExecutionStatus.EXPIRED,
        ExecutionStatus.CANCELLED,
    }
)


# Where a status may go by UPDATE (the trigger of migration 0006 holds the same list).
STATUS_TRANSITIONS = {
    ExecutionStatus.PENDING_APPROVAL: frozenset(
        {
            ExecutionStatus.QUEUED,
            ExecutionStatus.REJECTED,
            ExecutionStatus.EXPIRED,
            ExecutionStatus.CANCELLED,
            ExecutionStatus.DENIED,
        }
    ),
    ExecutionStatus.QUEUED: frozenset(
        {
            ExecutionStatus.RUNNING,
            ExecutionStatus.CANCELLED,
            ExecutionStatus.DENIED,
            ExecutionStatus.FAILED,
        }
    ),
    ExecutionStatus.RUNNING: frozenset(
        {ExecutionStatus.SUCCEEDED, ExecutionStatus.FAILED, ExecutionStatus.CANCELLED}
    ),
}


class EntryPoint(models.TextChoices):
    """Which door a call came in by: the REST API, the admin's test run or the MCP endpoint."""

    API = "api", "REST API"
    ADMIN = "admin", "Admin test run"
    MCP = "mcp", "MCP"


class Execution(models.Model):
    """One call of a tool by a principal, with what was asked, decided and returned.

    Inputs are stored with per-call secrets removed (``input_data``); the
    secrets a queued call still needs are kept only encrypted in
    ``sealed_secrets`` and wiped when the call finishes. Outputs above the
    tool's ``max_response_bytes`` are cut in the row and kept whole in
    ``output_artifact``.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Foreign keys are looked up through the composite indexes in Meta (each
    # leads with its key): every index costs each of the two writes of a call.
    tool = models.ForeignKey(
        Tool,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="executions",
        db_index=False,
    )
    tool_name = models.CharField(max_length=200, blank=True)
    tool_version = models.CharField(max_length=32, blank=True)
    tool_type = models.CharField(max_length=16, blank=True)
    requested_tool = models.CharField(
        max_length=200, blank=True, help_text="What the caller asked for (id or name)."
    )
    agent = models.ForeignKey(
        Agent,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="executions",
        db_index=False,
    )
    principal = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )
    principal_name = models.CharField(max_length=150, blank=True)
    # No index: read only with its row; deleting a user (rare) scans for it.
    agent_owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
        help_text="Who owned the agent when it made the call (four eyes: they may not approve it).",
    )
    role = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    roles_used = models.JSONField(default=list, blank=True)

    status = models.CharField(max_length=20, choices=ExecutionStatus.choices)
    reason_code = models.CharField(max_length=40, blank=True)

    input_data = models.JSONField(null=True, blank=True)
    raw_input = models.TextField(blank=True, help_text="Arguments text that did not parse as JSON.")
    input_hash = models.CharField(max_length=64, blank=True)
    # Paths in input_data the caller did not send, filled in from the schema's defaults:
    # written at admission, recorded by the admission event (what was sent vs applied).
    input_defaults = models.JSONField(default=list, blank=True)
    sealed_secrets = models.TextField(blank=True, default="")

    output_data = models.JSONField(null=True, blank=True)
    output_truncated = models.BooleanField(default=False)
    output_size = models.PositiveBigIntegerField(null=True, blank=True)
    output_artifact = models.CharField(max_length=255, blank=True)
    error_type = models.CharField(max_length=40, blank=True)
    error_message = models.TextField(blank=True)
    upstream_status = models.PositiveSmallIntegerField(null=True, blank=True)
    guard_decisions = models.JSONField(
        default=list,
        blank=True,
        help_text="What each guard decided on this call: guard, stage, action and where in "
        "the output (never the text it found).",
    )

    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    deadline_at = models.DateTimeField(null=True, blank=True)
    execution_time_ms = models.FloatField(null=True, blank=True)
    chars_in = models.PositiveIntegerField(default=0)
    chars_out = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    cached_from = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Answered from the cached result of this earlier execution.",
        db_index=False,
    )
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="Last time a worker looked at this queued call."
    )
    request_id = models.CharField(max_length=128, blank=True)
    # The OpenTelemetry trace the call was admitted in (32 hex digits; empty with traces
    # off): from the record to the request, the worker and the upstream call, and back.
    # Written at admission, never changed; not evidence (like request_id, not hashed).
    trace_id = models.CharField(
        max_length=32,
        blank=True,
        default="",
        help_text="The OpenTelemetry trace id of the call's admission (empty with traces off).",
    )
    client_address = models.GenericIPAddressField(null=True, blank=True)
    # Written at admission, like everything the record says about the request.
    entry_point = models.CharField(
        max_length=8, choices=EntryPoint.choices, default=EntryPoint.API, blank=True
    )
    client_name = models.CharField(
        max_length=200, blank=True, help_text="The MCP client's clientInfo name."
    )
    client_version = models.CharField(
        max_length=100, blank=True, help_text="The MCP client's clientInfo version."
    )
    protocol_version = models.CharField(
        max_length=20, blank=True, help_text="The MCP protocol revision the call was made in."
    )
    # A call an OAuth client made for a person (the principal): which client. Empty for a
    # static token's call. A client-credentials client acting as its agent is named too.
    oauth_client_id = models.CharField(max_length=255, blank=True)
    oauth_client_name = models.CharField(max_length=200, blank=True)
    # A tool acting with its caller's own upstream account: the connection whose token the
    # call used (``registry.upstream_connection``'s id; never the token), set when it ran.
    upstream_connection_id = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="The caller's upstream connection the call used (its id, never its token).",
    )
    worker = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["-created_at"], name="exec_created_idx"),
            models.Index(fields=["tool", "-created_at"], name="exec_tool_time_idx"),
            models.Index(fields=["agent", "-created_at"], name="exec_agent_time_idx"),
            # "Every call of tool X by agent Y last quarter."
            models.Index(fields=["tool", "agent", "-created_at"], name="exec_tool_agent_time_idx"),
            models.Index(fields=["principal", "-created_at"], name="exec_principal_time_idx"),
            models.Index(fields=["status", "-created_at"], name="exec_status_time_idx"),
            # Only calls narrowed to a role, or answered from the cache, have these:
            # partial indexes, so the other calls never write an entry.
            models.Index(
                fields=["role", "-created_at"],
                name="exec_role_time_idx",
                condition=models.Q(role__isnull=False),
            ),
            models.Index(
                fields=["cached_from"],
                name="exec_cached_from_idx",
                condition=models.Q(cached_from__isnull=False),
            ),
            models.Index(fields=["request_id"], name="exec_request_idx"),
            # "Every call client C made for anyone": only OAuth calls write an entry.
            models.Index(
                fields=["oauth_client_id", "-created_at"],
                name="exec_oauth_client_idx",
                condition=~models.Q(oauth_client_id=""),
            ),
            # Only calls admitted with traces on have one: the others write no entry.
            models.Index(
                fields=["trace_id"], name="exec_trace_idx", condition=~models.Q(trace_id="")
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name or self.requested_tool} {self.status} ({self.pk})"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES


class ApprovalStatus(models.TextChoices):
    """pending → approved | rejected | expired | cancelled (each decided once)."""

    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    EXPIRED = "expired", "Expired"
    CANCELLED = "cancelled", "Cancelled"


class ApprovalReason(models.TextChoices):
    """Why admission held a call for a person (recorded on its approval)."""

    TOOL = "tool_requires_approval", "The tool requires approval for every call"
    CONDITION = "approval_condition", "The arguments match the tool's approval condition"
    CONDITION_UNUSABLE = (
        "approval_condition_unusable",
        "The tool's approval condition could not be evaluated, so the call waits (fail closed)",
    )
    GUARD = "guard_requires_approval", "A guard on the tool asked for a person's decision"


class Approval(models.Model):
    """A human decision on one call, bound to that execution and the hash of its arguments.

    Decided once, by an approver who is neither the requester nor the
    requesting agent's owner; a rejection carries a reason. An undecided
    approval expires at ``expires_at``.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    execution = models.OneToOneField(Execution, on_delete=models.PROTECT, related_name="approval")
    input_hash = models.CharField(max_length=64)
    status = models.CharField(
        max_length=12, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING
    )
    requested_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_by_name = models.CharField(max_length=150, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True)
    # Why the call waits (set at admission; blank on approvals older than the column),
    # and the approval condition it matched, as it was then.
    required_because = models.CharField(
        max_length=32, choices=ApprovalReason.choices, blank=True, default=""
    )
    condition_matched = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["requested_at"]
        indexes = [
            models.Index(fields=["status", "requested_at"], name="approval_status_idx"),
            models.Index(fields=["status", "expires_at"], name="approval_expiry_idx"),
        ]

    def __str__(self) -> str:
        return f"approval of {self.execution_id} ({self.status})"
