"""The sign-in routes (``/accounts/oidc/sso/login/`` and its callback) and the page
a refused sign-in shows. Both routes answer 404 while SSO is off."""

from __future__ import annotations

import logging

from allauth.socialaccount.providers.oauth2.client import OAuth2Error
from allauth.socialaccount.providers.oauth2.views import OAuth2CallbackView, OAuth2LoginView
from django.contrib import admin
from django.http import Http404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.cache import never_cache

from registry.sso.config import PROVIDER_ID, hide_secret, sso_enabled

logger = logging.getLogger(__name__)


def _adapter(request, provider_id: str):
    from registry.sso.provider import ToolHubOIDCAdapter

    if provider_id != PROVIDER_ID or not sso_enabled():
        raise Http404("Single sign-on is not configured.")
    return ToolHubOIDCAdapter(request, provider_id)


@never_cache
def login(request, provider_id: str):
    """GET: a page with the button; POST (the button, with its CSRF token): off to the
    identity provider."""
    adapter = _adapter(request, provider_id)
    try:
        return OAuth2LoginView.adapter_view(adapter)(request)
    except (OSError, ValueError, OAuth2Error) as exc:
        # Discovery failed (unreachable, not JSON, another issuer): a page, not a 500.
        # requests' errors are OSErrors, its JSON errors ValueErrors.
        logger.warning(
            "single sign-on could not start: %s",
            hide_secret(f"{type(exc).__name__}: {exc}")[:500],
        )
        return refusal_page(
            request,
            "The identity provider cannot be reached at the moment: try again later, or "
            "sign in with your password.",
            status=502,
        )


@never_cache
def callback(request, provider_id: str):
    return OAuth2CallbackView.adapter_view(_adapter(request, provider_id))(request)


def refusal_page(request, message: str, *, status: int) -> TemplateResponse:
    """A refused sign-in, in the admin's look, with the way back to the login page."""
    context = {
        **admin.site.each_context(request),
        "title": "Sign-in refused",
        "message": message,
        "login_url": reverse("admin:login"),
    }
    response = TemplateResponse(request, "admin/toolhub/sso_refused.html", context, status=status)
    response.render()
    return response
