"""ToolHub's rules for allauth's sign-in flow (``ACCOUNT_ADAPTER``, ``SOCIALACCOUNT_ADAPTER``).

- The one provider is built from the settings (``registry.sso.config``); SSO is off
  while no issuer is set.
- A person is found by issuer and subject only, never by e-mail; one who has none is
  created (a safe, unused username; no password), whatever their e-mail.
- An inactive person is refused, and the refusal audited.
- At each sign-in the person's mapped roles and admin access are brought in line with
  their groups, with the sign-in recorded (``registry.services.sso``).
- A failed sign-in shows ToolHub's page and logs why, never the token or the secret.
"""

from __future__ import annotations

import logging

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from allauth.socialaccount.providers.base import AuthError
from django.db import transaction

from registry.services import sso as sso_services
from registry.sso import claims as sso_claims
from registry.sso.config import hide_secret, sso_app
from registry.sso.id_token import IdTokenRefused
from registry.sso.views import refusal_page

logger = logging.getLogger(__name__)

INACTIVE = "inactive"


def _data(sociallogin) -> dict:
    return sociallogin.account.extra_data or {}


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    def list_apps(self, request, provider=None, client_id=None):
        app = sso_app()
        if app is None:
            return []
        if provider and provider not in (app.provider, app.provider_id):
            return []
        if client_id and client_id != app.client_id:
            return []
        return [app]

    def authenticate_by_email(self, sociallogin):
        return None  # never: an e-mail address does not say who someone is

    def can_authenticate_by_email(self, login, email):
        return False

    def is_open_for_signup(self, request, sociallogin):
        return True  # the identity provider's people are ToolHub's

    def is_auto_signup_allowed(self, request, sociallogin):
        return True

    def populate_user(self, request, sociallogin, data):
        user = super().populate_user(request, sociallogin, data)
        user.username = sso_claims.unique_username(_data(sociallogin))
        profile = sso_claims.profile(_data(sociallogin))
        for name, value in profile.items():
            if isinstance(value, str):
                setattr(user, name, value.strip()[: user._meta.get_field(name).max_length])
        return user

    def save_user(self, request, sociallogin, form=None):
        with transaction.atomic():
            user = super().save_user(request, sociallogin, form)
            issuer, subject = sso_claims.identity(_data(sociallogin))
            sso_services.sso_person_created(user=user, issuer=issuer, subject=subject)
        return user

    def on_authentication_error(
        self, request, provider, error=None, exception=None, extra_context=None
    ):
        if error == AuthError.CANCELLED:
            reason = "The sign-in was cancelled at the identity provider."
        elif isinstance(exception, IdTokenRefused):
            reason = str(exception)
        elif exception is not None:
            reason = hide_secret(f"{type(exception).__name__}: {exception}")[:500]
        else:
            reason = "The sign-in's state was missing or stale (start again from the button)."
        logger.warning("single sign-on refused: %s", reason)
        raise ImmediateHttpResponse(
            refusal_page(request, "The identity provider's answer was not accepted.", status=401)
        )


def sso_app_provider_id() -> str | None:
    app = sso_app()
    return app.provider_id if app is not None else None


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request):
        return False  # no sign-up pages: people come from the identity provider or an admin

    def pre_login(self, request, user, **kwargs):
        sociallogin = (kwargs.get("signal_kwargs") or {}).get("sociallogin")
        if sociallogin is None or sociallogin.account.provider != sso_app_provider_id():
            return super().pre_login(request, user, **kwargs)
        data = _data(sociallogin)
        issuer, subject = sso_claims.identity(data)
        if not user.is_active:
            sso_services.sso_login_refused(
                user=user, issuer=issuer, subject=subject, reason=INACTIVE
            )
            return super().pre_login(request, user, **kwargs)
        response = super().pre_login(request, user, **kwargs)
        if response is not None:
            return response
        sso_services.sso_login_sync(
            user=user,
            issuer=issuer,
            subject=subject,
            groups=sso_claims.groups(data),
            profile=sso_claims.profile(data),
            created=bool(kwargs.get("signup")),
        )
        return None

    def respond_user_inactive(self, request, user):
        return refusal_page(
            request,
            "Your ToolHub account is deactivated: ask a platform admin.",
            status=403,
        )
