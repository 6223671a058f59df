"""API tokens in the admin: issued once (shown once, on the page a POST redirects to) and revoked, never edited."""

from __future__ import annotations

import time
from datetime import timedelta

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from registry.admin.mixins import GuardedChangeListMixin
from registry.models import ApiToken
from registry.policy import policy_allows
from registry.services import tokens as token_services
from toolhub.exceptions import Conflict

# Freshly issued tokens wait in the (server-side) session for the page that shows them,
# which takes them out: POST (issue) -> redirect -> GET (show once). A reload of that
# page shows nothing and issues nothing. Not shown within SHOW_WITHIN, they are dropped.
ISSUED_SESSION_KEY = "toolhub_issued_tokens"
SHOW_WITHIN_SECONDS = 600


def token_page(request, tokens: list[tuple[str, ApiToken, str]], back_url: str):
    """Keep freshly issued tokens for one showing and redirect to the page that shows them
    (never via messages or cookies: the session is kept on the server)."""
    waiting = _waiting_tokens(request.session)
    waiting["tokens"].extend(
        {
            "owner": owner,
            "name": token.name,
            "prefix": token.prefix,
            "expires_at": token.expires_at.isoformat() if token.expires_at else None,
            "raw": raw,
        }
        for owner, token, raw in tokens
    )
    waiting["back_url"] = back_url
    request.session[ISSUED_SESSION_KEY] = waiting
    return HttpResponseRedirect(reverse("admin:registry_apitoken_issued"))


def _waiting_tokens(session) -> dict:
    waiting = session.get(ISSUED_SESSION_KEY) or {}
    if time.time() - waiting.get("at", 0) > SHOW_WITHIN_SECONDS:
        waiting = {}
    return {"at": waiting.get("at") or time.time(), "tokens": waiting.get("tokens", [])}


def issued_tokens_view(request):
    """GET: the tokens just issued, once; they leave the session as the page is made."""
    waiting = request.session.pop(ISSUED_SESSION_KEY, None) or {}
    fresh = time.time() - waiting.get("at", 0) <= SHOW_WITHIN_SECONDS
    tokens = [
        {**item, "expires_at": parse_datetime(item["expires_at"]) if item["expires_at"] else None}
        for item in (waiting.get("tokens", []) if fresh else [])
    ]
    response = TemplateResponse(
        request,
        "admin/registry/token_issued.html",
        {
            **admin.site.each_context(request),
            "tokens": tokens,
            "back_url": waiting.get("back_url") or reverse("admin:registry_apitoken_changelist"),
            "title": "Token issued" if tokens else "No token to show",
        },
    )
    response["Cache-Control"] = "no-store"  # the browser must not keep the page either
    return response


class ApiTokenAddForm(forms.ModelForm):
    expires_in_days = forms.IntegerField(min_value=1, max_value=3650, required=False, initial=90)

    class Meta:
        model = ApiToken
        fields = ["user", "name"]


@admin.register(ApiToken)
class ApiTokenAdmin(GuardedChangeListMixin, admin.ModelAdmin):
    list_display = [
        "prefix",
        "name",
        "user",
        "status",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = ["revoked_at", "user"]
    search_fields = ["prefix", "name", "user__username"]
    list_select_related = ["user"]
    actions = ["revoke_tokens"]
    readonly_fields = [
        "user",
        "name",
        "prefix",
        "status",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
        "created_by",
    ]

    def get_urls(self):
        issued = path(
            "issued/",
            self.admin_site.admin_view(issued_tokens_view),
            name="registry_apitoken_issued",
        )
        return [issued, *super().get_urls()]

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = ApiTokenAddForm
        return super().get_form(request, obj, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    def get_fields(self, request, obj=None):
        return ["user", "name", "expires_in_days"] if obj is None else self.readonly_fields

    # Issuing here is for any user, revoking for any token: platform admins (the policy's
    # token.write); an agent's owner manages its tokens through the API.
    def has_add_permission(self, request):
        return super().has_add_permission(request) and policy_allows(
            actor=request.user, action="token.write"
        )

    def has_revoke_permission(self, request):
        return super().has_change_permission(request) and policy_allows(
            actor=request.user, action="token.write"
        )

    def has_change_permission(self, request, obj=None):
        return (
            False
            if obj is not None and request.method == "POST"
            else super().has_change_permission(request, obj)
        )

    def has_delete_permission(self, request, obj=None):
        return False  # revoke instead: tokens stay in the record

    def add_view(self, request, form_url="", extra_context=None):
        if not self.has_add_permission(request):
            raise DjangoPermissionDenied
        if request.method == "POST":
            form = ApiTokenAddForm(request.POST)
            if form.is_valid():
                days = form.cleaned_data.get("expires_in_days")
                token, raw = token_services.token_issue(
                    actor=request.user,
                    user=form.cleaned_data["user"],
                    name=form.cleaned_data["name"],
                    expires_at=timezone.now() + timedelta(days=days) if days else None,
                )
                return token_page(
                    request,
                    [(token.user.username, token, raw)],
                    reverse("admin:registry_apitoken_changelist"),
                )
        return super().add_view(request, form_url, extra_context)

    @admin.action(description="Revoke selected tokens", permissions=["revoke"])
    def revoke_tokens(self, request, queryset):
        count = 0
        for token in queryset:
            if not token.is_revoked:
                try:
                    token_services.token_revoke(actor=request.user, token=token)
                except Conflict as exc:  # the last platform admin's only way in
                    self.message_user(request, f"{token}: {exc.message}", messages.ERROR)
                    continue
                count += 1
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)
