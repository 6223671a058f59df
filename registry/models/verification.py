"""Runs of the audit log's verification, and the records each found altered."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class VerificationStatus(models.TextChoices):
    """queued → running → passed | failed | error (the verifier itself broke).

    A run is claimed once (``queued → running`` by a conditional update) and
    finished once; it is never run again.
    """

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    PASSED = "passed", "Passed"
    FAILED = "failed", "Failed"
    ERROR = "error", "Could not run"


FINISHED_VERIFICATIONS = (VerificationStatus.PASSED, VerificationStatus.FAILED)


class VerificationRun(models.Model):
    """One run of ``audit_verify`` asked for from the admin ("Verify now"): what it
    checked, where the chain ended, and what it found. Its result is also an audit
    event (``audit.verified``); the runs are what the admin's integrity panel shows."""

    id = models.BigAutoField(primary_key=True)
    status = models.CharField(
        max_length=10, choices=VerificationStatus.choices, default=VerificationStatus.QUEUED
    )
    requested_at = models.DateTimeField(auto_now_add=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    requested_by_name = models.CharField(max_length=150, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    checked = models.PositiveBigIntegerField(default=0)
    head_sequence = models.BigIntegerField(default=0)
    head_hash = models.CharField(max_length=64, blank=True)
    problem_kind = models.CharField(max_length=32, blank=True)
    problem_message = models.TextField(blank=True)
    warnings = models.JSONField(default=list, blank=True)
    # More records were found than kept (``VERIFICATION_FINDINGS_KEPT``).
    findings_truncated = models.BooleanField(default=False)

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["status", "-id"], name="verification_status_idx"),
        ]

    def __str__(self) -> str:
        return f"verification #{self.pk} ({self.status})"


class VerificationFinding(models.Model):
    """A record (an execution, an approval, an audit event) that a run found altered,
    deleted or written behind ToolHub's back: its page is flagged while this run is
    the latest finished one."""

    id = models.BigAutoField(primary_key=True)
    run = models.ForeignKey(VerificationRun, on_delete=models.CASCADE, related_name="findings")
    kind = models.CharField(max_length=32)
    target_type = models.CharField(max_length=64, blank=True)
    target_id = models.CharField(max_length=64, blank=True)
    event_id = models.BigIntegerField(null=True, blank=True)
    sequence = models.BigIntegerField(null=True, blank=True)
    message = models.TextField()

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["run", "target_type", "target_id"], name="finding_target_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.target_type} {self.target_id}"
