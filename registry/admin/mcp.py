"""MCP servers in the admin, and the catalog import page.

Every save goes through the MCP services (audited). The auth token is
write-only: the form never renders it, an empty field keeps the stored token.
The stdio environment shows its names with masked values.
"Sync tools now" runs the sync that ``executions`` registered with
``registry.services.mcp`` (``registry`` does not import ``executions``).

The import page (``Import tools…`` on the tool and MCP server lists) uploads a
catalog or OpenAPI file and shows the report; it is for platform admins.
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from registry import authorization, crypto
from registry.admin.forms import AdminJSONField
from registry.admin.mixins import (
    GuardedChangeListMixin,
    PlatformAdminWritesMixin,
    ServiceErrorsMixin,
)
from registry.drift import mcp_server_drift
from registry.importers.run import import_content
from registry.models import MCPServer
from registry.models.mcp import (
    MCPTransport,
    env_problem,
    stdio_command_problem,
    token_env_var_problem,
)
from registry.models.mcp.server import MCP_SERVER_FIELDS
from registry.services import mcp as services
from toolhub.exceptions import ToolHubError

_KEPT = "•••••••• (stored; type to replace)"


class MCPServerForm(forms.ModelForm):
    auth_token = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Bearer token, stored encrypted and never shown. Leave empty to keep it.",
    )
    clear_auth_token = forms.BooleanField(required=False, label="Remove the stored token")
    env = AdminJSONField(
        required=False,
        label="Env",
        help_text=(
            "stdio only: environment variables of the process, as a JSON object. Values are "
            f"stored encrypted and shown as {crypto.MASK}: leave a masked value to keep it, "
            "type a new value to replace it, remove the name to drop the variable."
        ),
    )

    tool_naming = forms.ChoiceField(
        choices=[
            ("server", "<server name>__<tool> (follows a rename of the server)"),
            ("none", "The upstream's own names, no prefix"),
            ("custom", "The prefix below"),
        ],
        initial="server",
        label="Tool names",
        help_text=(
            "How the server's tools are listed. A name another tool holds is refused at sync, "
            "naming both; a tool renamed here keeps its name through every sync."
        ),
    )

    class Meta:
        model = MCPServer
        fields = [*MCP_SERVER_FIELDS, "env", "auth_token", "clear_auth_token"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A read-only view (reviewers) has no form fields at all.
        if "auth_token" in self.fields and self.instance.pk and self.instance.has_auth_token:
            self.fields["auth_token"].widget.attrs["placeholder"] = _KEPT
        if "env" in self.fields and self.instance.pk:
            self.initial.setdefault("env", self.instance.masked_env())
        for name in ("args", "tools_allowed", "tools_denied", "sync_interval_minutes"):
            if name in self.fields:
                self.fields[name].required = False
        if "tool_naming" in self.fields and self.instance.pk:
            prefix = self.instance.tool_prefix
            naming = "server" if prefix is None else "none" if prefix == "" else "custom"
            self.initial["tool_naming"] = naming

    def clean_sync_interval_minutes(self):
        """Left empty: the stored interval (the default one for a new server)."""
        value = self.cleaned_data.get("sync_interval_minutes")
        if value is None:
            return self.instance.sync_interval_minutes
        return value

    def _post_clean(self):
        # The model is validated by the services (with the token applied), not here:
        # ModelForm's own full_clean would not know the token that is being set.
        pass

    def clean_token_env_var(self):
        # Refused here, on the form with what was typed, rather than by the service later.
        name = self.cleaned_data.get("token_env_var") or ""
        changed = "token_env_var" in self.changed_data  # a saved one stays editable around
        problem = token_env_var_problem(name) if name and changed else None
        if problem:
            raise forms.ValidationError(problem)
        return name

    def clean_env(self):
        env = self.cleaned_data.get("env")
        env = {} if env in (None, "") else env
        stored = self.instance.stored_env() if self.instance.pk else {}
        problem = env_problem(env, stored)
        if problem:
            raise forms.ValidationError(problem)
        return env

    def clean(self):
        # Refused on the form, on the command field, like the services refuse it.
        data = super().clean()
        launch = ("transport", "command", "args")
        changed = not self.instance.pk or any(f in self.changed_data for f in launch)
        if changed and data.get("transport") == MCPTransport.STDIO and data.get("command"):
            args = data.get("args") if isinstance(data.get("args"), list) else []
            problem = stdio_command_problem(data["command"], args)
            if problem:
                self.add_error("command", problem)
        self._clean_tool_prefix(data)
        return data

    def _clean_tool_prefix(self, data: dict) -> None:
        """``tool_prefix`` as the choice of naming says: None, "", or the prefix typed."""
        naming = data.get("tool_naming")
        if naming is None:  # a read-only view
            return
        if naming == "custom" and not data.get("tool_prefix"):
            self.add_error("tool_prefix", "Type the prefix, or choose another way of naming.")
        elif naming != "custom":
            data["tool_prefix"] = None if naming == "server" else ""
        if "tool_naming" in self.changed_data and "tool_prefix" not in self.changed_data:
            self.changed_data.append("tool_prefix")

    def token_change(self) -> dict:
        """The ``auth_token`` argument for the services: absent keeps the stored token."""
        if self.cleaned_data.get("clear_auth_token"):
            return {"auth_token": None}
        token = self.cleaned_data.get("auth_token")
        return {"auth_token": token} if token else {}


@admin.register(MCPServer)
class MCPServerAdmin(
    GuardedChangeListMixin, PlatformAdminWritesMixin, ServiceErrorsMixin, admin.ModelAdmin
):
    form = MCPServerForm
    list_display = [
        "name",
        "transport",
        "endpoint_display",
        "is_enabled",
        "tools_link",
        "last_synced_at",
        "sync_status",
    ]
    list_filter = ["transport", "is_enabled"]
    search_fields = ["name", "description", "url", "command"]
    ordering = ["name"]
    actions = ["sync_tools_now", "enable_servers", "disable_servers"]
    readonly_fields = [
        "id",
        "token_status",
        "last_synced_at",
        "last_sync_error",
        "tools_link",
        "drift_report",
        "created_at",
        "updated_at",
    ]
    fieldsets = [
        (None, {"fields": ["name", "description", "is_enabled"]}),
        (
            "Connection",
            {"fields": ["transport", "url", "command", "args", "env", "timeout_seconds"]},
        ),
        (
            "Authentication",
            {"fields": ["token_status", "auth_token", "clear_auth_token", "token_env_var"]},
        ),
        (
            "Tools",
            {
                "fields": [
                    "tool_naming",
                    "tool_prefix",
                    "tools_allowed",
                    "tools_denied",
                    "max_concurrency",
                    "tools_link",
                ]
            },
        ),
        ("Pinned definitions", {"fields": ["sync_interval_minutes", "drift_report"]}),
        (
            "Record",
            {"fields": ["id", "last_synced_at", "last_sync_error", "created_at", "updated_at"]},
        ),
    ]

    @admin.display(description="Endpoint")
    def endpoint_display(self, obj):
        return obj.endpoint or "—"

    @admin.display(description="Stored token")
    def token_status(self, obj):
        if obj is None or obj._state.adding:
            return "—"
        if obj.token_env_var:
            return f"read from ${obj.token_env_var} at call time"
        return "set (hidden)" if obj.has_auth_token else "none"

    @admin.display(description="Env")
    def env(self, obj):
        """The read-only view's environment (reviewers): names, values masked."""
        if obj is None or obj._state.adding or not obj.encrypted_env:
            return "—"
        return ", ".join(f"{name}={crypto.MASK}" for name in obj.env_names)

    @admin.display(description="Tools")
    def tools_link(self, obj):
        if obj is None or obj._state.adding:
            return "—"
        count = services.mcp_server_tools(obj).count()
        url = reverse("admin:registry_tool_changelist")
        return format_html('<a href="{}?q={}">{} tool(s)</a>', url, obj.listed_prefix, count)

    @admin.display(description="Drift report")
    def drift_report(self, obj):
        """The server's quarantined tools: their definition changed, or they are new."""
        if obj is None or obj._state.adding:
            return "—"
        drifted = mcp_server_drift(obj)["drifted"]
        if not drifted:
            return "No tool's definition differs from its approved one."
        return format_html_join(
            "",
            '<p><a href="{}">{}</a>: {} (pending {})</p>',
            (
                (
                    reverse("admin:registry_tool_change", args=[row["tool_id"]]),
                    row["name"],
                    row["quarantine_reason"],
                    (row["pending_definition_hash"] or "none")[:12],
                )
                for row in drifted
            ),
        )

    @admin.display(description="Last sync")
    def sync_status(self, obj):
        if obj.last_sync_error:
            return format_html('<span title="{}">failed</span>', obj.last_sync_error)
        return "ok" if obj.last_synced_at else "never"

    # Writes go through the services so every change is audited.

    def save_model(self, request, obj, form, change):
        data = {f: form.cleaned_data[f] for f in MCP_SERVER_FIELDS if f in form.cleaned_data}
        for name, empty in (("args", []), ("tools_allowed", []), ("tools_denied", [])):
            if data.get(name) is None:
                data[name] = empty
        data["env"] = form.cleaned_data.get("env") or {}
        token = form.token_change()
        if change:
            original = MCPServer.objects.get(pk=obj.pk)
            changed = {f: data[f] for f in form.changed_data if f in data}
            server = services.mcp_server_update(
                actor=request.user, server=original, data=changed, **token
            )
        else:
            name = data.pop("name")
            server = services.mcp_server_create(
                actor=request.user, name=name, **data, auth_token=token.get("auth_token")
            )
        obj.pk = server.pk
        obj._state.adding = False
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        services.mcp_server_delete(actor=request.user, server=obj)

    def delete_queryset(self, request, queryset):
        for server in queryset:
            services.mcp_server_delete(actor=request.user, server=server)

    # Actions

    @admin.action(description="Sync tools now", permissions=["change"])
    def sync_tools_now(self, request, queryset):
        for server in queryset:
            try:
                report = services.mcp_server_sync_run(actor=request.user, server=server)
            except ToolHubError as exc:
                self.message_user(request, f"{server.name}: {exc.message}", messages.ERROR)
                continue
            level = messages.SUCCESS if report.ok else messages.ERROR
            self.message_user(request, report.summary(), level)

    @admin.action(description="Enable selected servers", permissions=["change"])
    def enable_servers(self, request, queryset):
        for server in queryset:
            services.mcp_server_update(actor=request.user, server=server, data={"is_enabled": True})
        self.message_user(
            request, "Enabled; sync them to bring their tools back.", messages.SUCCESS
        )

    @admin.action(
        description="Disable selected servers (deactivates their tools)", permissions=["change"]
    )
    def disable_servers(self, request, queryset):
        for server in queryset:
            services.mcp_server_update(
                actor=request.user, server=server, data={"is_enabled": False}
            )
        self.message_user(request, "Disabled.", messages.SUCCESS)

    # The import page

    def get_urls(self):
        urls = super().get_urls()
        view = self.admin_site.admin_view(self.import_view)
        return [path("import/", view, name="registry_tool_import"), *urls]

    def import_view(self, request):
        if not authorization.is_platform_admin(request.user):
            raise PermissionDenied
        report = None
        if request.method == "POST":
            form = ImportForm(request.POST, request.FILES)
            if form.is_valid():
                report = import_content(
                    form.cleaned_data["text"],
                    actor=request.user,
                    fmt=form.cleaned_data["format"],
                    dry_run=form.cleaned_data["dry_run"],
                    base_url=form.cleaned_data["base_url"] or None,
                    namespace=form.cleaned_data["namespace"] or None,
                    tags=_items(form.cleaned_data["tags"]),
                    operations=_items(form.cleaned_data["operations"]),
                    max_tools=settings.TOOLHUB_IMPORT_MAX_TOOLS,
                )
        else:
            form = ImportForm(initial={"dry_run": True})
        context = {
            **self.admin_site.each_context(request),
            "title": "Import tools",
            "form": form,
            "report": report,
            "report_text": report.text() if report else "",
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/registry/import_tools.html", context)


def _items(text: str) -> list[str]:
    return [item.strip() for item in (text or "").split(",") if item.strip()]


class ImportForm(forms.Form):
    file = forms.FileField(
        help_text="tools.yml / mcp.yml / single-tool YAML, or an OpenAPI 3 document (JSON or YAML)."
    )
    format = forms.ChoiceField(
        choices=[("auto", "Detect"), ("openapi", "OpenAPI")], initial="auto", required=True
    )
    base_url = forms.CharField(required=False, help_text="OpenAPI only: the URL the tools call.")
    namespace = forms.CharField(required=False, help_text="OpenAPI only: prefix of tool names.")
    tags = forms.CharField(
        required=False,
        help_text="OpenAPI only: import only operations with one of these tags (comma-separated).",
    )
    operations = forms.CharField(
        required=False,
        help_text=(
            "OpenAPI only: import only these operations, by operationId or 'METHOD /path' "
            "(comma-separated). With tags: operations matching either."
        ),
    )
    dry_run = forms.BooleanField(required=False, help_text="Show the report; write nothing.")

    def clean(self):
        data = super().clean()
        upload = data.get("file")
        if upload is not None:
            if upload.size > 5 * 1024 * 1024:
                self.add_error("file", "The file is larger than 5 MB.")
                return data
            try:
                data["text"] = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                self.add_error("file", "The file is not UTF-8 text.")
        return data
