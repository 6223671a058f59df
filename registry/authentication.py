"""Token authentication: ``Authorization: Bearer <token>`` (or DRF's ``Token <token>``)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from rest_framework import authentication, exceptions

from registry.models.tokens import ApiToken, hash_token

# last_used_at is refreshed at most this often, so authentication does not
# write to the database on every request.
LAST_USED_RESOLUTION = timedelta(seconds=60)


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keywords = ("bearer", "token")

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].decode(errors="replace").lower() not in self.keywords:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(
                "Malformed Authorization header: expected 'Bearer <token>'."
            )
        try:
            raw = header[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed(
                "The token contains invalid characters."
            ) from None
        return self.authenticate_token(raw)

    def authenticate_token(self, raw: str):
        token = (
            ApiToken.objects.select_related("user", "user__agent")
            .filter(token_hash=hash_token(raw))
            .first()
        )
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if token.is_revoked:
            raise exceptions.AuthenticationFailed("This token has been revoked.")
        if token.is_expired:
            raise exceptions.AuthenticationFailed("This token has expired.")
        user = token.user
        if not user.is_active:
            raise exceptions.AuthenticationFailed("The account of this token is disabled.")
        agent = getattr(user, "agent", None)
        if agent is not None and not agent.is_active:
            raise exceptions.AuthenticationFailed("The agent of this token is inactive.")
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
            token.last_used_at = now
        return user, token

    def authenticate_header(self, request):
        return 'Bearer realm="toolhub"'
