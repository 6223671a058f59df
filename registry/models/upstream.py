"""People's own accounts at upstream services: the providers ToolHub connects to, and each
person's connection to one.

An ``UpstreamProvider`` is an OAuth 2.0 authorization server an HTTP tool's upstream
trusts (GitHub, Google, a company's own): ToolHub is registered there as a client (its
id and secret). A tool whose ``auth_type`` is ``caller_account`` names a provider; a call
of it for a person is sent with that person's access token, from their
``UpstreamConnection``, and with nothing else of the tool's credentials.

A connection keeps the person's tokens encrypted (the keyring of ``registry.crypto``):
never shown, never logged, never in an audit event or an API answer. A person has at
most one live connection per provider; a revoked one stays as the record of who was
connected when, and by whom it ended.
"""

from __future__ import annotations

import re
from datetime import timedelta

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone

from registry import crypto
from registry.models.revocable import Revocable

UPSTREAM_SLUG_PATTERN = r"^[a-z0-9][a-z0-9-]{0,39}$"
upstream_slug_validator = RegexValidator(
    UPSTREAM_SLUG_PATTERN,
    "Use 1 to 40 characters: lower-case letters, digits and '-' (not first).",
    code="invalid_slug",
)
# What a provider's audit events and admin pages show instead of its client secret.
SECRET_SHOWN = crypto.MASK


class TokenAuthMethod(models.TextChoices):
    """How ToolHub authenticates at the provider's token endpoint (RFC 6749 §2.3.1)."""

    POST = "client_secret_post", "client_secret_post (in the form body)"
    BASIC = "client_secret_basic", "client_secret_basic (HTTP Basic)"


class UpstreamProvider(models.Model):
    name = models.CharField(max_length=100, help_text="What people see: 'GitHub', 'Google'.")
    slug = models.CharField(
        max_length=40,
        unique=True,
        validators=[upstream_slug_validator],
        help_text="What tools name in their upstream_provider config, and the connect page's URL.",
    )
    authorization_url = models.URLField(
        max_length=500, help_text="The provider's authorization endpoint (people are sent there)."
    )
    token_url = models.URLField(
        max_length=500,
        help_text="The provider's token endpoint (ToolHub posts to it, through the egress guard).",
    )
    revocation_url = models.URLField(
        max_length=500,
        blank=True,
        help_text="RFC 7009 revocation endpoint, if the provider has one: disconnecting "
        "revokes the person's tokens there first.",
    )
    client_id = models.CharField(max_length=300)
    encrypted_client_secret = models.TextField(blank=True, default="")
    token_auth_method = models.CharField(
        max_length=20, choices=TokenAuthMethod.choices, default=TokenAuthMethod.POST
    )
    scopes = models.CharField(
        max_length=1000, blank=True, help_text="Space-separated scopes asked for when connecting."
    )
    authorization_params = models.JSONField(
        default=dict,
        blank=True,
        help_text='More parameters of the authorization request, e.g. Google\'s {"access_type": '
        '"offline", "prompt": "consent"} (a refresh token).',
    )
    token_exchange = models.BooleanField(
        default=False,
        help_text="The provider accepts RFC 8693 token exchange: each call exchanges the "
        "person's token for one meant for the audience below, used for that call only.",
    )
    exchange_audience = models.CharField(
        max_length=500, blank=True, help_text="The audience asked for in a token exchange."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def has_client_secret(self) -> bool:
        return bool(self.encrypted_client_secret)

    def set_client_secret(self, secret: str | None) -> None:
        self.encrypted_client_secret = (
            crypto.encrypt_json(secret, field="client_secret") if secret else ""
        )

    def client_secret(self) -> str:
        """The secret, decrypted: only for the token endpoint's request."""
        if not self.encrypted_client_secret:
            return ""
        return str(crypto.decrypt_json(self.encrypted_client_secret))

    def scope_list(self) -> list[str]:
        return [s for s in re.split(r"\s+", self.scopes or "") if s]


class UpstreamConnection(Revocable):
    """One person's account at one provider: their tokens, encrypted."""

    person = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="upstream_connections"
    )
    provider = models.ForeignKey(
        UpstreamProvider, on_delete=models.CASCADE, related_name="connections"
    )
    encrypted_access_token = models.TextField()
    encrypted_refresh_token = models.TextField(blank=True, default="")
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="When the access token expires (empty: not said)."
    )
    scopes = models.CharField(max_length=1000, blank=True, help_text="The scopes granted.")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The person who connected (themself).",
    )
    refreshed_at = models.DateTimeField(null=True, blank=True)
    refreshed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Whose call refreshed it last (the runner refreshes before a call).",
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # One live connection per person and provider: connecting again replaces it.
            models.UniqueConstraint(
                fields=["person", "provider"],
                condition=models.Q(revoked_at__isnull=True),
                name="upstream_connection_live_unique",
            )
        ]

    def __str__(self) -> str:
        return f"{self.person} at {self.provider}"

    @property
    def has_refresh_token(self) -> bool:
        return bool(self.encrypted_refresh_token)

    def access_token(self) -> str:
        return str(crypto.decrypt_json(self.encrypted_access_token))

    def refresh_token(self) -> str:
        if not self.encrypted_refresh_token:
            return ""
        return str(crypto.decrypt_json(self.encrypted_refresh_token))

    def set_tokens(self, access_token: str, refresh_token: str | None) -> None:
        """Store ``access_token``; ``refresh_token`` None keeps the stored one (a provider
        that does not rotate sends none), "" drops it."""
        self.encrypted_access_token = crypto.encrypt_json(access_token, field="access_token")
        if refresh_token is not None:
            self.encrypted_refresh_token = (
                crypto.encrypt_json(refresh_token, field="refresh_token") if refresh_token else ""
            )

    def expires_within(self, seconds: float) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now() + timedelta(
            seconds=seconds
        )

    @property
    def usable(self) -> bool:
        """Live, and either its token is still good or it can be refreshed."""
        return self.is_live and (self.has_refresh_token or not self.expires_within(0))
