"""Roles in the admin: their permissions and members, changed through the role services."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.contrib.auth.models import Group
from django.utils.html import format_html, format_html_join

from registry.admin.forms import IdMultipleChoiceField
from registry.admin.mixins import GuardedChangeListMixin
from registry.models import Role, RoleProfile, ToolGrant
from registry.services import access as services

admin.site.unregister(Group)


class RoleForm(forms.ModelForm):
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    permissions = IdMultipleChoiceField(
        # ToolHub's own permissions only (the services refuse others): auth.change_user
        # would let a platform admin make anyone a superuser.
        queryset=services.role_permission_choices(),
        required=False,
        widget=admin.widgets.FilteredSelectMultiple("permissions", is_stacked=False),
        help_text="Platform rights (e.g. registry.grant_tool). Rights on tools are given as grants on each tool's page.",
    )

    class Meta:
        model = Role
        fields = ["name", "description", "permissions"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.instance._state.adding:
            profile = RoleProfile.objects.filter(group=self.instance).first()
            self.fields["description"].initial = profile.description if profile else ""

    def clean(self):
        cleaned = super().clean()
        if self.instance._state.adding or "permissions" not in cleaned:
            return cleaned
        gives_admin = any(services.is_platform_admin_right(p) for p in cleaned["permissions"])
        if not gives_admin and services.leaves_no_platform_admin(without_roles=[self.instance.pk]):
            raise forms.ValidationError(services.LAST_PLATFORM_ADMIN, code="last_platform_admin")
        return cleaned


@admin.register(Role)
class RoleAdmin(GuardedChangeListMixin, admin.ModelAdmin):
    form = RoleForm
    list_display = ["name", "description_display", "member_count"]
    search_fields = ["name"]
    readonly_fields = ["tools_granted", "members"]

    @admin.display(description="Description")
    def description_display(self, obj):
        profile = RoleProfile.objects.filter(group=obj).first()
        return profile.description if profile else ""

    @admin.display(description="Members")
    def member_count(self, obj):
        return obj.user_set.count()

    @admin.display(description="Tools this role may use")
    def tools_granted(self, obj):
        if obj is None or obj._state.adding:
            return "—"
        grants = ToolGrant.objects.filter(role=obj).select_related("tool").order_by("tool__name")
        if not grants:
            return "No grants."
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
        labels = [f"{p.content_type.app_label}.{p.codename}" for p in data.get("permissions", [])]
        if change:
            role = Group.objects.get(pk=obj.pk)
            services.role_update(
                actor=request.user,
                role=role,
                data={
                    "name": data["name"],
                    "description": data["description"],
                    "permissions": labels,
                },
            )
        else:
            role = services.role_create(
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
        if services.leaves_no_platform_admin(without_roles=[role.pk for role in objs]):
            protected = [*protected, services.LAST_PLATFORM_ADMIN]
        return deleted, counts, perms_needed, protected

    def delete_model(self, request, obj):
        services.role_delete(actor=request.user, role=Group.objects.get(pk=obj.pk))

    def delete_queryset(self, request, queryset):
        for role in queryset:
            services.role_delete(actor=request.user, role=Group.objects.get(pk=role.pk))
