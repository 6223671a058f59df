"""Agents in the admin: their form, their roles and webhook, and tokens issued on creation."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import admin
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import transaction
from django.http import Http404, HttpResponseNotAllowed
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from registry.admin.api_tokens import token_page
from registry.admin.audit import admin_time
from registry.admin.forms import IdMultipleChoiceField
from registry.admin.mixins import GuardedChangeListMixin
from registry.models import Agent
from registry.policy import policy_allows
from registry.services import agents as agent_services
from registry.services import tokens as token_services


class AgentForm(forms.ModelForm):
    roles = IdMultipleChoiceField(
        queryset=Group.objects.order_by("name"),
        required=False,
        widget=admin.widgets.FilteredSelectMultiple("roles", is_stacked=False),
    )

    # Checked as the API checks it (agent_services.webhook_problems): no scheme is assumed.
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
        problems = agent_services.webhook_problems(
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


@transaction.atomic
def _issue_tokens(actor, agents) -> list[tuple[str, object, str]]:
    """One token for each agent (named after the day, valid 90 days): (agent, token, raw)."""
    issued = []
    for agent in agents:
        token, raw = token_services.token_issue(
            actor=actor,
            user=agent.user,
            name=f"admin {timezone.now():%Y-%m-%d}",
            expires_at=timezone.now() + timedelta(days=90),
        )
        issued.append((agent.name, token, raw))
    return issued


class AgentViewForm(forms.ModelForm):
    """The agent page for those who may only view it."""

    webhook_url = forms.CharField(required=False)

    class Meta:
        model = Agent
        fields = ["name", "owner", "description", "is_active", "webhook_url"]


class AgentAdmin(GuardedChangeListMixin, admin.ModelAdmin):
    """Agents, their roles, webhook and tokens. Not registered here:
    ``executions.admin.tools`` registers it with links to the agent's executions."""

    form = AgentForm
    list_display = ["name", "owner", "is_active", "role_names", "created_at"]
    list_filter = ["is_active", "user__groups"]
    search_fields = ["name", "owner__username", "description"]
    list_select_related = ["owner", "user"]
    actions = ["issue_token", "deactivate_agents", "activate_agents"]
    readonly_fields = ["id", "user", "created_at", "updated_at", "tokens_link"]

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("user__groups")

    # Writes are the policy's (registry.policy); reading stays Django's view permission.
    def has_add_permission(self, request):
        return super().has_add_permission(request) and policy_allows(
            actor=request.user, action="agent.write"
        )

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and policy_allows(
            actor=request.user, action="agent.write"
        )

    def has_issue_token_permission(self, request):
        """The bulk action issues tokens for any agents: platform admins only."""
        return self.has_view_permission(request) and policy_allows(
            actor=request.user, action="token.write"
        )

    def _may_issue_token(self, request, agent) -> bool:
        return policy_allows(actor=request.user, action="token.write", owner=agent.owner)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        context["may_issue_token"] = obj is not None and self._may_issue_token(request, obj)
        return super().render_change_form(request, context, add, change, form_url, obj)

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
                    admin_time(t.expires_at, "never"),
                    admin_time(t.last_used_at, "never"),
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
            agent_services.agent_update(
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
            created = agent_services.agent_create(
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

    def get_urls(self):
        issue = path(
            "<path:object_id>/issue-token/",
            self.admin_site.admin_view(self.issue_token_view),
            name="registry_agent_issue_token",
        )
        return [issue, *super().get_urls()]

    def issue_token_view(self, request, object_id):
        """POST from the agent's page: issue one token, then redirect to the page that
        shows it once (a reload there issues nothing)."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        agent = self.get_object(request, object_id)
        if agent is None:
            raise Http404("No such agent.")
        if not self._may_issue_token(request, agent):
            raise DjangoPermissionDenied
        back = reverse("admin:registry_agent_change", args=[agent.pk])
        return token_page(request, _issue_tokens(request.user, [agent]), back)

    @admin.action(description="Issue a token (shown once)", permissions=["issue_token"])
    def issue_token(self, request, queryset):
        issued = _issue_tokens(request.user, queryset.select_related("user"))
        return token_page(request, issued, reverse("admin:registry_agent_changelist"))

    @admin.action(
        description="Deactivate selected agents (their tokens stop working)", permissions=["change"]
    )
    def deactivate_agents(self, request, queryset):
        for agent in queryset:
            agent_services.agent_update(actor=request.user, agent=agent, data={"is_active": False})

    @admin.action(description="Activate selected agents", permissions=["change"])
    def activate_agents(self, request, queryset):
        for agent in queryset:
            agent_services.agent_update(actor=request.user, agent=agent, data={"is_active": True})
