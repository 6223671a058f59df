"""Agents, roles, tokens and grants in the admin. Every change goes through the access services."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import transaction
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from registry import access
from registry.admin.forms import IdMultipleChoiceField
from registry.admin.mixins import GuardedChangeListMixin
from registry.models import Agent, ApiToken, Role, RoleProfile, ToolGrant
from registry.services import access as services
from toolhub.exceptions import Conflict

admin.site.unregister(Group)


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


class AgentForm(forms.ModelForm):
    roles = IdMultipleChoiceField(
        queryset=Group.objects.order_by("name"),
        required=False,
        widget=admin.widgets.FilteredSelectMultiple("roles", is_stacked=False),
    )

    # Checked as the API checks it (services.webhook_problems): no scheme is assumed.
    webhook_url = forms.CharField(
        required=False,
        max_length=200,
        help_text=Agent._meta.get_field("webhook_url").help_text,
    )
    webhook_secret = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text=(
            "Signing secret of the webhook (at least 16 characters), stored encrypted and never "
            "shown. Leave empty to keep the stored one."
        ),
    )
    clear_webhook_secret = forms.BooleanField(
        required=False, label="Remove the webhook and its secret"
    )

    class Meta:
        model = Agent
        fields = ["name", "owner", "description", "is_active", "roles", "webhook_url"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "webhook_secret" in self.fields and self.instance.webhook_secret:
            self.fields["webhook_secret"].widget.attrs["placeholder"] = "•••••••• (stored)"
        # View-only users get a form without editable fields.
        if "roles" in self.fields and not self.instance._state.adding:
            self.fields["roles"].initial = list(self.instance.user.groups.all())
        if "name" in self.fields and not self.instance._state.adding:
            self.fields["name"].disabled = True
        if "owner" in self.fields:
            self.fields["owner"].queryset = self.fields["owner"].queryset.filter(agent__isnull=True)

    def _webhook_touched(self) -> bool:
        """Whether the page changes the webhook (one stored under older rules, left as it
        is, blocks no other change)."""
        return bool(
            {"webhook_url", "webhook_secret", "clear_webhook_secret"} & set(self.changed_data)
        )

    def clean(self):
        data = super().clean()
        if not self._webhook_touched():
            return data
        if data.get("clear_webhook_secret"):
            data["webhook_url"], data["webhook_secret"] = "", ""
        secret = data.get("webhook_secret") or None
        has_secret = bool(self.instance.webhook_secret) and not data.get("clear_webhook_secret")
        problems = services.webhook_problems(
            data.get("webhook_url") or "", secret=secret, has_secret=has_secret
        )
        for field, message in problems.items():
            self.add_error(field, message)
        return data

    def webhook_change(self) -> dict:
        """The webhook fields for the services: an empty secret field keeps the stored one."""
        if not self._webhook_touched():
            return {}
        data = {"webhook_url": self.cleaned_data.get("webhook_url") or ""}
        if self.cleaned_data.get("clear_webhook_secret"):
            data["webhook_secret"] = None
        elif self.cleaned_data.get("webhook_secret"):
            data["webhook_secret"] = self.cleaned_data["webhook_secret"]
        return data


class AgentViewForm(forms.ModelForm):
    """The agent page for those who may only view it."""

    webhook_url = forms.CharField(required=False)

    class Meta:
        model = Agent
        fields = ["name", "owner", "description", "is_active", "webhook_url"]


@admin.register(Agent)
class AgentAdmin(GuardedChangeListMixin, admin.ModelAdmin):
    form = AgentForm
    list_display = ["name", "owner", "is_active", "role_names", "created_at"]
    list_filter = ["is_active", "user__groups"]
    search_fields = ["name", "owner__username", "description"]
    list_select_related = ["owner", "user"]
    actions = ["issue_token", "deactivate_agents", "activate_agents"]
    readonly_fields = ["id", "user", "created_at", "updated_at", "tokens_link"]

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("user__groups")

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is not None and not self.has_change_permission(request, obj):
            kwargs["form"] = AgentViewForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and not self.has_change_permission(request, obj):
            fields.append("role_names")
        return fields

    @admin.display(description="Roles")
    def role_names(self, obj):
        return ", ".join(sorted(g.name for g in obj.user.groups.all())) or "—"

    @admin.display(description="Tokens")
    def tokens_link(self, obj):
        if obj is None or obj._state.adding:
            return "—"
        tokens = obj.user.api_tokens.order_by("-created_at")[:20]
        url = reverse("admin:registry_apitoken_changelist")
        rows = format_html_join(
            "",
            "<li><code>{}…</code> {} ({}; expires {}; last used {})</li>",
            (
                (
                    t.prefix,
                    t.name or "unnamed",
                    t.status,
                    t.expires_at or "never",
                    t.last_used_at or "never",
                )
                for t in tokens
            ),
        )
        return format_html(
            '<ul>{}</ul><a href="{}?user__id__exact={}">All tokens of this agent (revoke there)</a>',
            rows,
            url,
            obj.user_id,
        )

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        role_ids = [r.pk for r in data.get("roles", [])]
        if change:
            services.agent_update(
                actor=request.user,
                agent=obj,
                data={
                    "description": data["description"],
                    "is_active": data["is_active"],
                    "owner": data["owner"],
                    "role_ids": role_ids,
                    **form.webhook_change(),
                },
            )
        else:
            created = services.agent_create(
                actor=request.user,
                name=data["name"],
                owner=data["owner"],
                description=data["description"],
                is_active=data["is_active"],
                role_ids=role_ids,
                **form.webhook_change(),
            )
            obj.pk, obj.user_id = created.pk, created.user_id
            obj._state.adding = False
        obj.refresh_from_db()

    def save_related(self, request, form, formsets, change):
        pass  # roles are saved by the service; tokens are read-only here

    def has_delete_permission(self, request, obj=None):
        return False  # deactivate instead: agents appear in the audit trail

    @admin.action(description="Issue a token (shown once)", permissions=["change"])
    def issue_token(self, request, queryset):
        issued = []
        with transaction.atomic():
            for agent in queryset.select_related("user"):
                token, raw = services.token_issue(
                    actor=request.user,
                    user=agent.user,
                    name=f"admin {timezone.now():%Y-%m-%d}",
                    expires_at=timezone.now() + timedelta(days=90),
                )
                issued.append((agent.name, token, raw))
        return token_page(request, issued, reverse("admin:registry_agent_changelist"))

    @admin.action(
        description="Deactivate selected agents (their tokens stop working)", permissions=["change"]
    )
    def deactivate_agents(self, request, queryset):
        for agent in queryset:
            services.agent_update(actor=request.user, agent=agent, data={"is_active": False})

    @admin.action(description="Activate selected agents", permissions=["change"])
    def activate_agents(self, request, queryset):
        for agent in queryset:
            services.agent_update(actor=request.user, agent=agent, data={"is_active": True})


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


class ToolGrantInline(admin.TabularInline):
    """Grant and revoke on the tool's page. Only platform admins see and use it."""

    model = ToolGrant
    extra = 0
    fields = ["role", "action", "granted_by", "created_at"]
    readonly_fields = ["granted_by", "created_at"]
    verbose_name = "grant"
    verbose_name_plural = "Grants (roles that may read, execute or manage this tool)"

    def has_view_permission(self, request, obj=None):
        return access.is_platform_admin(request.user) or access.is_reviewer(request.user)

    def has_add_permission(self, request, obj=None):
        return access.is_platform_admin(request.user)

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return access.is_platform_admin(request.user)
