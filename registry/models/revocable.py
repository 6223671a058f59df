"""A grant a person gave and they or an admin can withdraw: when it ended and who ended
it. A revoked row stays, the record of who allowed what and when."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Revocable(models.Model):
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The person themself, or the admin who revoked it.",
    )

    class Meta:
        abstract = True

    @property
    def is_live(self) -> bool:
        return self.revoked_at is None
