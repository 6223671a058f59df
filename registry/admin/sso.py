"""Single sign-on in the admin: the group mappings (platform admins write, through
``registry.services.sso``, audited) and the people's links to the identity provider
(read-only). Hidden while SSO is off.

allauth's own admin pages are taken out: its provider apps would show a client secret
(ToolHub's is in the environment, never in the database), and its e-mail addresses
and tokens are not used (no tokens are stored, no one is found by e-mail).
"""

from __future__ import annotations

from allauth.account.models import EmailAddress
from allauth.socialaccount.models import SocialAccount, SocialApp, SocialToken
from django.conf import settings
from django.contrib import admin

from registry import authorization
from registry.admin.mixins import (
    GuardedChangeListMixin,
    PlatformAdminWritesMixin,
    ReadOnlyAdminMixin,
    ServiceErrorsMixin,
)
from registry.models import SsoGroupMapping
from registry.services import sso as services
from registry.sso.config import sso_enabled

if admin.site.is_registered(SocialApp):
    admin.site.unregister(SocialApp)
if admin.site.is_registered(SocialToken):
    admin.site.unregister(SocialToken)
if admin.site.is_registered(EmailAddress):
    admin.site.unregister(EmailAddress)
if admin.site.is_registered(SocialAccount):
    admin.site.unregister(SocialAccount)


def _what_role_makes(role) -> str:
    if role is None:
        return ""
    codenames = set(role.permissions.values_list("codename", flat=True))
    made = []
    if "grant_tool" in codenames:
        made.append("platform admin")
    if "review_all" in codenames:
        made.append("reviewer")
    return ", ".join(made)


class OnlyWithSsoMixin:
    """While SSO is off, the page is not there for anyone (superusers included)."""

    def has_module_permission(self, request):
        return sso_enabled() and super().has_module_permission(request)

    def has_view_permission(self, request, obj=None):
        return sso_enabled() and super().has_view_permission(request, obj)

    def has_add_permission(self, request):
        return sso_enabled() and super().has_add_permission(request)

    def has_change_permission(self, request, obj=None):
        return sso_enabled() and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return sso_enabled() and super().has_delete_permission(request, obj)


@admin.register(SsoGroupMapping)
class SsoGroupMappingAdmin(
    OnlyWithSsoMixin,
    GuardedChangeListMixin,
    PlatformAdminWritesMixin,
    ServiceErrorsMixin,
    admin.ModelAdmin,
):
    list_display = ["idp_group", "role", "makes_staff", "makes"]
    list_filter = ["makes_staff"]
    search_fields = ["idp_group", "role__name"]
    fields = ["idp_group", "role", "makes_staff"]
    change_list_template = "admin/registry/ssogroupmapping/change_list.html"

    @admin.display(description="Makes its members")
    def makes(self, obj):
        return _what_role_makes(obj.role)

    def changelist_view(self, request, extra_context=None):
        extra_context = {
            **(extra_context or {}),
            "settings_mappings": sorted(settings.TOOLHUB_SSO_GROUP_ROLES.items()),
        }
        return super().changelist_view(request, extra_context)

    def save_model(self, request, obj, form, change):
        data = {f: form.cleaned_data.get(f) for f in services.MAPPING_FIELDS}
        if change:
            mapping = services.sso_mapping_update(
                actor=request.user, mapping=SsoGroupMapping.objects.get(pk=obj.pk), data=data
            )
        else:
            mapping = services.sso_mapping_create(actor=request.user, **data)
        obj.pk = mapping.pk
        obj._state.adding = False
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        services.sso_mapping_delete(actor=request.user, mapping=obj)

    def delete_queryset(self, request, queryset):
        for mapping in queryset:
            services.sso_mapping_delete(actor=request.user, mapping=mapping)


@admin.register(SocialAccount)
class SsoIdentityAdmin(
    OnlyWithSsoMixin, GuardedChangeListMixin, ReadOnlyAdminMixin, admin.ModelAdmin
):
    """Who is linked to which identity (issuer#subject). Deleting the person removes it."""

    list_display = ["user", "uid", "last_login", "date_joined"]
    search_fields = ["user__username", "uid"]
    fields = ["user", "uid", "last_login", "date_joined", "extra_data"]
    readonly_fields = fields
    list_select_related = ["user"]

    def has_module_permission(self, request):
        return sso_enabled() and self.has_view_permission(request)

    def has_view_permission(self, request, obj=None):
        user = request.user
        return sso_enabled() and (
            authorization.is_platform_admin(user) or authorization.is_reviewer(user)
        )
