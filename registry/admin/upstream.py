"""Upstream providers in the admin: platform admins register, change and remove them
(``registry.services.upstream``, audited), reviewers read. The client secret is
write-only: the form never renders it, an empty field keeps the stored one.

People's connections are listed by ``executions.admin.upstream`` (revoking one asks the
provider to revoke its tokens: outgoing I/O, which lives in executions).
"""

from __future__ import annotations

from django import forms
from django.contrib import admin

from registry.admin.mixins import (
    GuardedChangeListMixin,
    PlatformAdminWritesMixin,
    ServiceErrorsMixin,
)
from registry.models import UpstreamProvider
from registry.services import upstream as services

_KEPT = "•••••••• (stored; type to replace)"


def _url_field(model_field: str, required: bool = True) -> forms.URLField:
    field = UpstreamProvider._meta.get_field(model_field)
    return forms.URLField(
        max_length=field.max_length,
        required=required,
        assume_scheme="https",
        help_text=field.help_text,
    )


class UpstreamProviderForm(forms.ModelForm):
    authorization_url = _url_field("authorization_url")
    token_url = _url_field("token_url")
    revocation_url = _url_field("revocation_url", required=False)
    client_secret = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="ToolHub's client secret at the provider, stored encrypted and never "
        "shown. Leave empty to keep it.",
    )
    clear_client_secret = forms.BooleanField(
        required=False, label="Remove the stored client secret"
    )

    class Meta:
        model = UpstreamProvider
        fields = [*services.PROVIDER_FIELDS, "client_secret", "clear_client_secret"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A read-only view (reviewers) has no form fields at all.
        secret = self.fields.get("client_secret")
        if secret is not None and self.instance.pk and self.instance.has_client_secret:
            secret.widget.attrs["placeholder"] = _KEPT
        if "authorization_params" in self.fields:
            self.fields["authorization_params"].required = False

    def clean_authorization_params(self):
        value = self.cleaned_data.get("authorization_params")
        return {} if value in (None, "") else value

    def _post_clean(self):
        # Validated by the services, with the secret applied.
        pass

    def secret_change(self) -> dict:
        """The services' ``client_secret`` argument: absent keeps the stored one."""
        if self.cleaned_data.get("clear_client_secret"):
            return {"client_secret": None}
        secret = self.cleaned_data.get("client_secret")
        return {"client_secret": secret} if secret else {}


@admin.register(UpstreamProvider)
class UpstreamProviderAdmin(
    GuardedChangeListMixin, PlatformAdminWritesMixin, ServiceErrorsMixin, admin.ModelAdmin
):
    form = UpstreamProviderForm
    list_display = ["name", "slug", "token_url", "token_exchange", "live_connections"]
    list_filter = ["token_exchange"]
    search_fields = ["name", "slug", "client_id"]
    readonly_fields = ["created_at", "updated_at", "redirect_uri_hint"]

    def get_fields(self, request, obj=None):
        fields = [*services.PROVIDER_FIELDS, "redirect_uri_hint"]
        if self.has_change_permission(request, obj):
            fields[fields.index("client_id") + 1 : fields.index("client_id") + 1] = [
                "client_secret",
                "clear_client_secret",
            ]
        return fields

    @admin.display(description="Live connections")
    def live_connections(self, obj):
        return obj.connections.filter(revoked_at__isnull=True).count()

    @admin.display(description="Redirect URI to register at the provider")
    def redirect_uri_hint(self, obj):
        slug = obj.slug if obj is not None and obj.slug else "<slug>"
        return f"https://<ToolHub's host>/accounts/upstream/{slug}/callback/"

    def save_model(self, request, obj, form, change):
        data = {name: form.cleaned_data.get(name) for name in services.PROVIDER_FIELDS}
        data = {
            k: ("" if v is None and k != "authorization_params" else v) for k, v in data.items()
        }
        secret = form.secret_change()
        if change:
            provider = services.upstream_provider_update(
                actor=request.user,
                provider=UpstreamProvider.objects.get(pk=obj.pk),
                data=data,
                **secret,
            )
        else:
            provider = services.upstream_provider_create(actor=request.user, **data, **secret)
        obj.pk = provider.pk
        obj._state.adding = False
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        services.upstream_provider_delete(actor=request.user, provider=obj)

    def delete_queryset(self, request, queryset):
        for provider in queryset:
            services.upstream_provider_delete(actor=request.user, provider=provider)
