"""A person's consent that an OAuth client acts for them at one ToolHub resource.

The client is django-oauth-toolkit's ``Application``; its tokens say which person and
which resource they are for. The consent is what the person agreed to on the consent
page: the scopes, for that resource. It is remembered (the next sign-in of the same
client for no more than that does not ask again) until the person or an admin revokes
it, which also revokes every token the client holds for the person there: the next call
with one of them is refused.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from oauth2_provider.settings import oauth2_settings

from registry.models.revocable import Revocable


class Consent(Revocable):
    person = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oauth_consents"
    )
    client = models.ForeignKey(
        oauth2_settings.APPLICATION_MODEL, on_delete=models.CASCADE, related_name="consents"
    )
    resource = models.URLField(
        max_length=500, help_text="Where the client's tokens act: /mcp, /mcp/<toolset> or /api/v1."
    )
    scopes = models.JSONField(default=list, help_text="What the person agreed the client may do.")
    granted_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-granted_at"]
        constraints = [
            # One live consent per person, client and resource: a wider consent replaces it.
            models.UniqueConstraint(
                fields=["person", "client", "resource"],
                condition=models.Q(revoked_at__isnull=True),
                name="consent_live_unique",
            )
        ]

    def __str__(self) -> str:
        return f"{self.person} → {self.client.name or self.client.client_id}"

    def covers(self, scopes) -> bool:
        return self.is_live and set(scopes) <= set(self.scopes)

    @classmethod
    def covering(cls, person, client, resource: str, scopes) -> bool:
        """Whether ``person``'s live consent lets ``client`` act at ``resource`` with
        ``scopes``: what every token acting for a person must still have behind it."""
        consent = cls.objects.filter(
            person=person, client=client, resource=resource, revoked_at__isnull=True
        ).first()
        return consent is not None and consent.covers(scopes)
