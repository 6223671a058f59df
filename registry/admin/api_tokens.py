"""API tokens in the admin: issued once (shown in the response only) and revoked, never edited."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone

from registry.admin.mixins import GuardedChangeListMixin
from registry.models import ApiToken
from registry.services import access as services
from toolhub.exceptions import Conflict


def token_page(request, tokens: list[tuple[str, ApiToken, str]], back_url: str):
    """Show freshly issued tokens once, in the response itself (never via messages or cookies)."""
    return TemplateResponse(
        request,
        "admin/registry/token_issued.html",
        {
            "tokens": [{"owner": o, "token": t, "raw": r} for o, t, r in tokens],
            "back_url": back_url,
            "title": "Token issued",
        },
    )


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

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = ApiTokenAddForm
        return super().get_form(request, obj, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    def get_fields(self, request, obj=None):
        return ["user", "name", "expires_in_days"] if obj is None else self.readonly_fields

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
                token, raw = services.token_issue(
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

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke_tokens(self, request, queryset):
        count = 0
        for token in queryset:
            if not token.is_revoked:
                try:
                    services.token_revoke(actor=request.user, token=token)
                except Conflict as exc:  # the last platform admin's only way in
                    self.message_user(request, f"{token}: {exc.message}", messages.ERROR)
                    continue
                count += 1
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)
