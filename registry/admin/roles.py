"""Roles in the admin: their permissions and members, changed through the role services."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.contrib.auth.models import Group
from django.utils.html import format_html, format_html_join

from registry import rights
from registry.admin.mixins import GuardedChangeListMixin
from registry.models import Role, RoleProfile, ToolGrant
from registry.policy import policy_allows
from registry.services import platform_admins as platform_admin_services
from registry.services import roles as role_services

admin.site.unregister(Group)


RIGHTS_HELP = (
    "What members may do on ToolHub itself, in the admin and the API. Which tools they "
    "may read, execute, manage or approve calls of is not set here: that is given by "
    "grants, on each tool's page (or for all tools), and listed under \"Tools this role "
    'may use". A member needs both: a platform right to edit tools, and a manage grant '
    "on the tool to edit that one."
)


def _right_label(right: rights.PlatformRight) -> str:
    return format_html(
        '<strong>{}</strong><span class="right-lets">{}</span>', right.title, right.lets
    )


def held_permissions(role) -> set[str]:
    if role is None or role._state.adding:
        return set()
    return {
        f"{app_label}.{codename}"
        for app_label, codename in role.permissions.values_list(
            "content_type__app_label", "codename"
        )
    }


class RoleForm(forms.ModelForm):
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    # Platform rights in words, each standing for a few of ToolHub's own permissions
    # (the services refuse others: auth.change_user would let a platform admin make
    # anyone a superuser).
    permissions = forms.MultipleChoiceField(
        label="Platform rights",
        choices=[(right.key, _right_label(right)) for right in rights.PLATFORM_RIGHTS],
        required=False,
        widget=forms.CheckboxSelectMultiple(attrs={"class": "platform-rights"}),
        help_text=RIGHTS_HELP,
    )

    class Meta:
        model = Role
        fields = ["name", "description"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.held = held_permissions(self.instance)
        self.fields["permissions"].initial = rights.rights_held(self.held)
        if not self.instance._state.adding:
            profile = RoleProfile.objects.filter(group=self.instance).first()
            self.fields["description"].initial = profile.description if profile else ""

    def permission_labels(self) -> list[str]:
        """The role's permissions after this form: those of the rights ticked, and those it
        holds outside any right it fully held (kept as they are)."""
        ticked = self.cleaned_data.get("permissions") or []
        dropped = set(rights.permissions_of(set(rights.rights_held(self.held)) - set(ticked)))
        kept = sorted(self.held - dropped)
        return list(dict.fromkeys([*kept, *rights.permissions_of(ticked)]))

    def clean(self):
        cleaned = super().clean()
        if self.instance._state.adding or "permissions" not in cleaned:
            return cleaned
        gives_admin = "registry.grant_tool" in self.permission_labels()
        if not gives_admin and platform_admin_services.leaves_no_platform_admin(
            without_roles=[self.instance.pk]
        ):
            raise forms.ValidationError(
                platform_admin_services.LAST_PLATFORM_ADMIN, code="last_platform_admin"
            )
        return cleaned


@admin.register(Role)
class RoleAdmin(GuardedChangeListMixin, admin.ModelAdmin):
    form = RoleForm
    list_display = ["name", "description_display", "member_count"]
    search_fields = ["name"]
    readonly_fields = ["tools_granted", "other_permissions", "members"]

    # Writes are the policy's (registry.policy); reading stays Django's view permission.
    def _writes(self, request) -> bool:
        return policy_allows(actor=request.user, action="role.write")

    def has_add_permission(self, request):
        return super().has_add_permission(request) and self._writes(request)

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and self._writes(request)

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and self._writes(request)

    @admin.display(description="Other permissions held")
    def other_permissions(self, obj):
        """Permissions the role holds outside the rights shown ticked (kept on save)."""
        held = held_permissions(obj)
        outside = held - set(rights.permissions_of(rights.rights_held(held)))
        if not outside:
            return "None."
        return format_html(
            "{}<br><small>Kept as they are when the rights above are saved.</small>",
            ", ".join(sorted(outside)),
        )

    @admin.display(description="Description")
    def description_display(self, obj):
        profile = RoleProfile.objects.filter(group=obj).first()
        return profile.description if profile else ""

    @admin.display(description="Members")
    def member_count(self, obj):
        return obj.user_set.count()

    @admin.display(description="Tools this role may use (grants)")
    def tools_granted(self, obj):
        if obj is None or obj._state.adding:
            return "—"
        grants = ToolGrant.objects.filter(role=obj).select_related("tool").order_by("tool__name")
        if not grants:
            return "No grants: give them on each tool's page (Grants), or for all tools."
        return format_html(
            "<ul>{}</ul>",
            format_html_join(
                "",
                "<li>{}: {}</li>",
                ((g.tool.name if g.tool_id else "all tools", g.action) for g in grants),
            ),
        )

    @admin.display(description="Members")
    def members(self, obj):
        if obj is None or obj._state.adding:
            return "—"
        return (
            ", ".join(obj.user_set.order_by("username").values_list("username", flat=True)) or "—"
        )

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        labels = form.permission_labels()
        if change:
            role = Group.objects.get(pk=obj.pk)
            role_services.role_update(
                actor=request.user,
                role=role,
                data={
                    "name": data["name"],
                    "description": data["description"],
                    "permissions": labels,
                },
            )
        else:
            role = role_services.role_create(
                actor=request.user,
                name=data["name"],
                description=data["description"],
                permissions=labels,
            )
            obj.pk = role.pk
            obj._state.adding = False
        obj.refresh_from_db()

    def save_related(self, request, form, formsets, change):
        pass  # permissions are saved by the service

    def get_deleted_objects(self, objs, request):
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        if platform_admin_services.leaves_no_platform_admin(
            without_roles=[role.pk for role in objs]
        ):
            protected = [*protected, platform_admin_services.LAST_PLATFORM_ADMIN]
        return deleted, counts, perms_needed, protected

    def delete_model(self, request, obj):
        role_services.role_delete(actor=request.user, role=Group.objects.get(pk=obj.pk))

    def delete_queryset(self, request, queryset):
        for role in queryset:
            role_services.role_delete(actor=request.user, role=Group.objects.get(pk=role.pk))
