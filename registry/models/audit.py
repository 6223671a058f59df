"""The audit log: one append-only row per governance change or decision."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class AuditEventQuerySet(models.QuerySet):
    """Refuses bulk edits: audit rows are only ever inserted."""

    def update(self, **kwargs):
        raise PermissionError("Audit events are append-only; they cannot be updated.")

    def delete(self):
        raise PermissionError("Audit events are append-only; they cannot be deleted.")

    _raw_delete = delete


class AuditEvent(models.Model):
    """An immutable record of who did what to which object, when, and from where.

    ``before``/``after`` hold snapshots with secret values masked. ``actor`` is
    kept as a foreign key (SET_NULL, so deleting a user keeps the history) and
    as a denormalized name that survives the user.
    """

    id = models.BigAutoField(primary_key=True)
    occurred_at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_constraint=False,
    )
    actor_name = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=64, db_index=True)
    target_type = models.CharField(max_length=64, blank=True)
    target_id = models.CharField(max_length=64, blank=True)
    target_repr = models.CharField(max_length=200, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    request_id = models.CharField(max_length=128, blank=True, db_index=True)
    client_address = models.GenericIPAddressField(null=True, blank=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        permissions = [("review_all", "Can review every record, read-only")]
        indexes = [
            models.Index(fields=["target_type", "target_id"], name="audit_target_idx"),
            models.Index(fields=["actor", "-occurred_at"], name="audit_actor_time_idx"),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.action} {self.target_repr}"

    def save(self, *args, **kwargs):
        if self.pk is not None and not self._state.adding:
            raise PermissionError("Audit events are append-only; they cannot be updated.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise PermissionError("Audit events are append-only; they cannot be deleted.")
