"""OAuth in the admin: clients (registered here, by RFC 7591, or from a metadata document),
the tokens they hold (never shown), and people's consents, revocable by a platform admin.

The toolkit registers these admins itself, by the classes its settings name
(``toolhub/settings/oauth.py``); each is the toolkit's, kept to platform admins, with
every change audited.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from oauth2_provider import admin as oauth_admin
from oauth2_provider.models import AbstractApplication

from registry import authorization
from registry.admin.mixins import GuardedChangeListMixin
from registry.models import Agent, Consent
from registry.oauth.validator import redirect_refusal
from registry.policy import policy_allows
from registry.services.audit import audit_record
from registry.services.consents import consent_revoke

RS256 = AbstractApplication.RS256_ALGORITHM


class PlatformAdminsOnly(GuardedChangeListMixin):
    """Written by platform admins only (``oauth_client.write``), seen by them and by
    reviewers (who acted for whom is evidence); its list's filters apply or are refused,
    as every changelist's."""

    def _allowed(self, request) -> bool:
        return policy_allows(actor=request.user, action="oauth_client.write")

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def has_view_permission(self, request, obj=None):
        return self._allowed(request) or authorization.is_reviewer(request.user)

    def has_change_permission(self, request, obj=None):
        return self._allowed(request) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return self._allowed(request) and super().has_delete_permission(request, obj)


def client_snapshot(client) -> dict:
    return {
        "client_id": client.client_id,
        "name": client.name,
        "client_type": client.client_type,
        "grant_type": client.authorization_grant_type,
        "redirect_uris": client.redirect_uris.split(),
        "user": client.user.get_username() if client.user_id else None,
    }


class OAuthClientAdmin(PlatformAdminsOnly, oauth_admin.ApplicationAdmin):
    def has_add_permission(self, request):
        return self._allowed(request)

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)

        class ClientForm(form):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                if "algorithm" in self.fields:  # ID tokens: RS256, as discovery says
                    self.fields["algorithm"].choices = [(RS256, "RSA with SHA-2 256")]
                    self.fields["algorithm"].initial = RS256

            def clean(self):
                data = super().clean()
                for uri in (data.get("redirect_uris") or "").split():
                    refusal = redirect_refusal(uri)
                    if refusal:
                        raise ValidationError({"redirect_uris": f"{uri}: {refusal}"})
                grant, user = data.get("authorization_grant_type"), data.get("user")
                if grant == "client-credentials" and (
                    user is None or not Agent.objects.filter(user=user).exists()
                ):
                    raise ValidationError(
                        {
                            "user": "A client-credentials client acts as an agent: choose the "
                            "agent's user (its tokens act with that agent's rights)."
                        }
                    )
                return data

        return ClientForm

    def save_model(self, request, obj, form, change):
        before = client_snapshot(type(obj).objects.get(pk=obj.pk)) if change else None
        super().save_model(request, obj, form, change)
        audit_record(
            actor=request.user,
            action="oauth.client_changed" if change else "oauth.client_registered",
            target=obj,
            target_repr=obj.name or obj.client_id,
            before=before,
            after={**client_snapshot(obj), "by": "admin"},
        )

    def delete_model(self, request, obj):
        before = client_snapshot(obj)
        super().delete_model(request, obj)
        audit_record(
            actor=request.user,
            action="oauth.client_removed",
            target_type="oauth2_provider.application",
            target_id=before["client_id"],
            target_repr=before["name"] or before["client_id"],
            before=before,
        )


class AccessTokenAdmin(PlatformAdminsOnly, oauth_admin.AccessTokenAdmin):
    pass


class RefreshTokenAdmin(PlatformAdminsOnly, oauth_admin.RefreshTokenAdmin):
    pass


class GrantAdmin(PlatformAdminsOnly, oauth_admin.GrantAdmin):
    pass


class IDTokenAdmin(PlatformAdminsOnly, oauth_admin.IDTokenAdmin):
    pass


@admin.register(Consent)
class ConsentAdmin(PlatformAdminsOnly, admin.ModelAdmin):
    list_display = (
        "person",
        "client",
        "resource",
        "scopes",
        "granted_at",
        "last_used_at",
        "revoked_at",
    )
    list_filter = ("revoked_at", "client")
    search_fields = ("person__username", "client__name", "client__client_id", "resource")
    list_select_related = ("person", "client")
    readonly_fields = [f.name for f in Consent._meta.fields]
    actions = ("revoke",)

    def has_add_permission(self, request):
        return False  # a person gives consent on the consent page

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # revoked, never deleted: the record of who allowed what stays

    @admin.action(description="Revoke the selected consents (and their clients' tokens)")
    def revoke(self, request, queryset):
        revoked = 0
        for consent in queryset.select_related("client", "person"):
            if consent.revoked_at is None:
                consent_revoke(actor=request.user, consent=consent)
                revoked += 1
        messages.success(request, f"Revoked {revoked} consent(s).")
