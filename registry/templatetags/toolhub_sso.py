"""The "Sign in with <provider>" button of the admin's login page (single sign-on)."""

from __future__ import annotations

from django import template
from django.conf import settings
from django.urls import reverse

from registry.sso.config import PROVIDER_ID, sso_enabled

register = template.Library()


@register.inclusion_tag("admin/toolhub/sso_button.html", takes_context=True)
def sso_button(context) -> dict:
    """Nothing while SSO is off; else a form that POSTs (with its CSRF token) to the
    sign-in route, carrying the page's ``next``."""
    if not sso_enabled():
        return {"show": False}
    return {
        "show": True,
        "name": settings.TOOLHUB_SSO_NAME,
        "action": reverse("openid_connect_login", kwargs={"provider_id": PROVIDER_ID}),
        "next": context.get("next") or "",
        "csrf_token": context.get("csrf_token"),
    }
