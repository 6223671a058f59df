"""The audit log: one append-only row per governance change or decision."""

from __future__ import annotations

import uuid

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
        db_index=False,  # audit_actor_time_idx leads with it
    )
    actor_name = models.CharField(max_length=150, blank=True)
    # The actor's id as written, covered by ``mac`` (``actor`` is cleared when the user
    # is deleted, so it cannot be): a changed ``actor_id`` is found by comparing.
    actor_ref = models.BigIntegerField(null=True, blank=True)
    action = models.CharField(max_length=64)
    target_type = models.CharField(max_length=64, blank=True)
    target_id = models.CharField(max_length=64, blank=True)
    target_repr = models.CharField(max_length=200, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    request_id = models.CharField(max_length=128, blank=True)
    client_address = models.GenericIPAddressField(null=True, blank=True)
    # HMAC of the content under TOOLHUB_AUDIT_SIGNING_KEY, made when the event is
    # written (registry.services.audit_auth): the sealer seals only authentic events.
    mac = models.CharField(max_length=64, blank=True, default="", db_default="")
    # The event's identity, random and fixed when it is written, covered by ``mac``
    # (version 2): a copy of an event under another id carries the same one.
    uid = models.UUIDField(null=True, blank=True, unique=True, default=uuid.uuid4, editable=False)
    # The hash chain, filled in by the sealer (registry.services.audit_chain):
    # each sealed event's hash covers its content and the previous event's hash.
    sequence = models.BigIntegerField(null=True, blank=True, unique=True)
    prev_hash = models.CharField(max_length=64, blank=True)
    hash = models.CharField(max_length=64, blank=True)
    sealed_at = models.DateTimeField(null=True, blank=True)
    # HMAC of (sequence, hash) made by the sealer: the chain itself is a plain hash anyone
    # can recompute after deleting an event; this seal cannot be (audit_auth.seal_mac).
    seal_mac = models.CharField(max_length=64, blank=True, default="", db_default="")

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        permissions = [("review_all", "Can review every record, read-only")]
        indexes = [
            models.Index(fields=["target_type", "target_id"], name="audit_target_idx"),
            models.Index(fields=["actor", "-occurred_at"], name="audit_actor_time_idx"),
            models.Index(fields=["action", "-occurred_at"], name="audit_action_time_idx"),
            # Prefix filters ("execution.*") on PostgreSQL; equality uses the one above.
            models.Index(
                fields=["action"], name="audit_action_prefix_idx", opclasses=["varchar_pattern_ops"]
            ),
            models.Index(fields=["request_id"], name="audit_request_idx"),
            models.Index(fields=["actor_name", "-occurred_at"], name="audit_actorname_time_idx"),
            models.Index(
                fields=["id"],
                name="audit_unsealed_idx",
                condition=models.Q(sequence__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.action} {self.target_repr}"

    def save(self, *args, **kwargs):
        if self.pk is not None and not self._state.adding:
            raise PermissionError("Audit events are append-only; they cannot be updated.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise PermissionError("Audit events are append-only; they cannot be deleted.")


class AuditChainHead(models.Model):
    """The last sealed event of the chain (one row). Sealers lock it to append in order."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    sequence = models.BigIntegerField(default=0)
    hash = models.CharField(max_length=64, blank=True)
    # The sequence of the first event sealed with a MAC: from there on the sealer
    # seals no event without one.
    authenticated_since = models.BigIntegerField(null=True, blank=True)
    # The sequence of the first event sealed with an identity (``uid``, MAC version 2):
    # from there on the sealer seals no event without one.
    identified_since = models.BigIntegerField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"head #{self.sequence}"


class AuditCheckpoint(models.Model):
    """Where verification starts after retention removed older events (after exporting them).

    ``sequence``/``hash`` are those of the last removed event; the export file
    holds the removed events and can itself be verified against them.
    ``export_sha256`` is the export file's hash and ``mac`` authenticates the
    checkpoint under ``TOOLHUB_AUDIT_SIGNING_KEY``, chained to the checkpoint
    before it (``registry.services.audit_checkpoint``).
    """

    id = models.BigAutoField(primary_key=True)
    sequence = models.BigIntegerField(unique=True)
    hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    removed_before = models.DateTimeField()
    events_removed = models.PositiveBigIntegerField(default=0)
    executions_removed = models.PositiveBigIntegerField(default=0)
    export_path = models.CharField(max_length=500)
    export_sha256 = models.CharField(max_length=64, blank=True, default="", db_default="")
    mac = models.CharField(max_length=64, blank=True, default="", db_default="")

    class Meta:
        ordering = ["-sequence"]

    def __str__(self) -> str:
        return f"checkpoint at #{self.sequence}"
