"""The site's admins for tools and agents: the registry's, composed with what the
executions app adds to their pages (a tool's test run and command sandbox, the
links to a tool's or an agent's executions).

The registry declares ``ToolAdmin`` and ``AgentAdmin`` without registering them
(it cannot import this app); each is registered here once, so no admin replaces
another's (docs/development.md, "Hooks").
"""

from __future__ import annotations

import json
import uuid

from django import forms
from django.contrib import admin, messages
from django.http import Http404
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.html import format_html, format_html_join

from executions.admin.executions import executions_changelist_url
from executions.models import EntryPoint
from executions.services.pipeline import execution_request
from registry import authorization
from registry.admin.agents import AgentAdmin
from registry.admin.audit import object_audit_url
from registry.admin.tools import ToolAdmin
from registry.formats import secret_parameters
from registry.models import Action, Agent, Tool
from toolhub import context as toolhub_context
from toolhub.exceptions import ToolHubError


class TestRunForm(forms.Form):
    arguments = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 10, "class": "test-run-arguments"}),
        initial="{}",
        help_text="A JSON object matching the tool's input schema.",
    )
    wait_seconds = forms.FloatField(
        min_value=0, max_value=600, initial=30, help_text="How long to wait for the result."
    )


def _without_secret_arguments(form: TestRunForm, tool: Tool) -> TestRunForm:
    """The form to show again after a run: what was given, minus the values of the
    tool's per-call secrets (the page must not echo them back)."""
    secrets = set(secret_parameters(tool)) if tool.type == "http" else set()
    if not secrets:
        return form
    raw = form.data.get("arguments", "")
    try:
        given = json.loads(raw)
    except ValueError:
        given = None
    shown = (
        json.dumps({k: ("" if k in secrets else v) for k, v in given.items()}, indent=2)
        if isinstance(given, dict)
        else "{}"
    )
    return TestRunForm(
        initial={"arguments": shown, "wait_seconds": form.data.get("wait_seconds", 30)}
    )


def command_summary(tool: Tool):
    """A command tool's argv, limits and whether it can run: its program on the
    allow-list, and this host able to sandbox it."""
    from executions.executors.command import CONFIGS, allowlist_problem, sandbox_problem
    from executions.executors.configs import ConfigError

    plain = {c.config_key: c.value for c in tool.configs.all() if not c.is_secret}
    rows = []
    try:
        argv = CONFIGS.read(plain, "argv")
    except ConfigError as exc:
        argv, problem = None, str(exc)
    else:
        problem = allowlist_problem(argv[0]) if argv else "config 'argv' is not set"
    rows.append(("argv", json.dumps(argv) if argv else "—"))
    rows.append(("an input starting with '-'", _dash_rule(plain)))
    for key in ("timeout_seconds", "memory_mb", "cpu_seconds", "max_processes", "max_output_bytes"):
        try:
            value = CONFIGS.read(plain, key)
        except ConfigError as exc:
            value = str(exc)
        rows.append((key, "the tool's timeout" if value is None else value))
    rows.append(("TOOLHUB_COMMAND_ALLOWLIST", problem or "lists the program"))
    rows.append(
        ("sandbox on this host", sandbox_problem() or "bubblewrap and user namespaces work")
    )
    return format_html(
        "<table>{}</table>",
        format_html_join("", "<tr><th>{}</th><td><code>{}</code></td></tr>", rows),
    )


def _dash_rule(plain) -> str:
    """What a command tool does with an input that would start an argument with '-'."""
    from executions.executors.command import CONFIGS
    from executions.executors.configs import ConfigError

    try:
        if CONFIGS.read(plain, "end_of_options"):
            return "data: '--' goes before the first argument built from an input"
        allowed = sorted(CONFIGS.read(plain, "dash_values_at"))
    except ConfigError as exc:
        return str(exc)
    return f"refused, except at argv positions {allowed}" if allowed else "refused"


def activity_links(*, executions_url: str, audit_url: str):
    return format_html(
        '<a href="{}">Executions</a> · <a href="{}">Audit events</a>', executions_url, audit_url
    )


@admin.register(Tool)
class ToolAdminWithTestRun(ToolAdmin):
    """The tool admin plus a 'Test run' page that calls the same pipeline as the API."""

    change_form_template = "admin/registry/tool/change_form.html"
    readonly_fields = [*ToolAdmin.readonly_fields, "activity", "command_sandbox"]

    def get_fieldsets(self, request, obj=None):
        fieldsets = list(super().get_fieldsets(request, obj))
        if obj is not None and obj.type == "command":
            fieldsets.append(("Sandboxed command", {"fields": ["command_sandbox"]}))
        if obj is not None:
            fieldsets.append(("Activity", {"fields": ["activity"]}))
        return fieldsets

    @admin.display(description="Program, limits and sandbox")
    def command_sandbox(self, obj):
        if obj is None or obj._state.adding or obj.type != "command":
            return "—"
        return command_summary(obj)

    @admin.display(description="Records of this tool")
    def activity(self, obj):
        if obj is None or obj._state.adding:
            return "—"
        return activity_links(
            executions_url=executions_changelist_url(tool=obj.pk),
            audit_url=object_audit_url(obj),
        )

    def get_urls(self):
        urls = super().get_urls()
        extra = [
            path(
                "<path:object_id>/test-run/",
                self.admin_site.admin_view(self.test_run_view),
                name="registry_tool_test_run",
            )
        ]
        return extra + urls

    def test_run_view(self, request, object_id):
        try:
            tool_id = uuid.UUID(object_id)
        except ValueError:  # the route takes any path, as the admin's own change URL does
            raise Http404(f"No tool with id '{object_id}'.") from None
        tool = Tool.objects.filter(pk=tool_id).first()
        if tool is None or not authorization.can(request.user, Action.READ, tool):
            # As everywhere else: a tool the user may not read does not exist for them.
            raise Http404(f"No tool with id '{object_id}'.")
        form = TestRunForm(request.POST or None)
        execution = None
        error = None
        if request.method == "POST" and form.is_valid():
            try:
                with toolhub_context.amend(entry_point=EntryPoint.ADMIN):
                    execution = execution_request(
                        user=request.user,
                        tool_ref=str(tool.pk),
                        arguments=form.cleaned_data["arguments"],
                        wait=form.cleaned_data["wait_seconds"],
                    )
            except ToolHubError as exc:
                error = {
                    "code": exc.code,
                    "message": exc.message,
                    "details": exc.details,
                    **exc.extra,
                }
                self.message_user(request, exc.message, messages.ERROR)
        if request.method == "POST" and form.is_valid():
            form = _without_secret_arguments(form, tool)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Test run: {tool.name}",
            "tool": tool,
            "form": form,
            "execution": execution,
            "execution_output": json.dumps(execution.output_data, indent=2) if execution else "",
            "error": json.dumps(error, indent=2) if error else "",
            "schema": json.dumps(tool.input_schema(), indent=2),
            "opts": self.model._meta,
            "can_execute": authorization.can(request.user, Action.EXECUTE, tool),
        }
        return TemplateResponse(request, "admin/registry/tool/test_run.html", context)


@admin.register(Agent)
class AgentAdminWithActivity(AgentAdmin):
    """The agent admin plus links to the agent's executions and audit events."""

    readonly_fields = [*AgentAdmin.readonly_fields, "activity"]

    @admin.display(description="Records of this agent")
    def activity(self, obj):
        if obj is None or obj._state.adding:
            return "—"
        return activity_links(
            executions_url=executions_changelist_url(agent=obj.pk),
            audit_url=object_audit_url(obj),
        )
