"""Executions in the admin (read-only records) and the tool page's test run."""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from executions.models import Approval, ApprovalStatus, Execution
from executions.services.approvals import (
    approval_decide,
    approval_for,
    approvals_visible_to,
    may_decide,
)
from executions.services.pipeline import execution_request
from registry import access
from registry.admin.audit import pretty_json
from registry.admin.mixins import NoCountAdminMixin, ReadOnlyAdminMixin
from registry.admin.tools import ToolAdmin
from registry.models import Action, Tool
from toolhub.exceptions import ToolHubError


@admin.register(Execution)
class ExecutionAdmin(NoCountAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "created_at",
        "tool_name",
        "principal_name",
        "status",
        "reason_code",
        "error_type",
        "execution_time_ms",
        "short_id",
    ]
    list_filter = ["status", "tool_type", "created_at", "error_type"]
    search_fields = ["=id", "=request_id", "=tool_name", "=principal_name"]
    list_select_related = ["tool", "agent"]
    list_per_page = 50
    date_hierarchy = "created_at"
    ordering = ["-created_at"]
    fields = [
        "id",
        "status",
        "reason_code",
        "tool_link",
        "tool_name",
        "tool_version",
        "agent_link",
        "principal_name",
        "role",
        "roles_used",
        "input_pretty",
        "raw_input",
        "output_pretty",
        "output_truncated",
        "output_artifact",
        "error_type",
        "error_message",
        "upstream_status",
        "attempts",
        "created_at",
        "queued_at",
        "started_at",
        "finished_at",
        "deadline_at",
        "execution_time_ms",
        "chars_in",
        "chars_out",
        "cost",
        "input_hash",
        "request_id",
        "client_address",
        "worker",
        "audit_link",
    ]
    readonly_fields = fields

    @admin.display(description="id")
    def short_id(self, obj):
        return str(obj.pk)[:8]

    @admin.display(description="Tool")
    def tool_link(self, obj):
        if not obj.tool_id:
            return obj.requested_tool or "—"
        url = reverse("admin:registry_tool_change", args=[obj.tool_id])
        return format_html('<a href="{}">{}</a>', url, obj.tool_name)

    @admin.display(description="Agent")
    def agent_link(self, obj):
        if not obj.agent_id:
            return "— (a person)"
        url = reverse("admin:registry_agent_change", args=[obj.agent_id])
        return format_html('<a href="{}">{}</a>', url, obj.agent.name)

    @admin.display(description="Input (secrets removed)")
    def input_pretty(self, obj):
        return pretty_json(obj.input_data)

    @admin.display(description="Output")
    def output_pretty(self, obj):
        return pretty_json(obj.output_data)

    @admin.display(description="Audit events")
    def audit_link(self, obj):
        url = reverse("admin:registry_auditevent_changelist")
        return format_html('<a href="{}?q={}">Audit events of this execution</a>', url, obj.pk)

    def get_actions(self, request):
        return {}


class TestRunForm(forms.Form):
    arguments = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8, "cols": 80, "style": "font-family: monospace"}),
        initial="{}",
        help_text="A JSON object matching the tool's input schema.",
    )
    wait_seconds = forms.FloatField(
        min_value=0, max_value=600, initial=30, help_text="How long to wait for the result."
    )


class ToolAdminWithTestRun(ToolAdmin):
    """The tool admin plus a 'Test run' page that calls the same pipeline as the API."""

    change_form_template = "admin/registry/tool/change_form.html"

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
        tool = get_object_or_404(Tool, pk=object_id)
        if not access.can(request.user, Action.READ, tool):
            raise DjangoPermissionDenied
        form = TestRunForm(request.POST or None)
        execution = None
        error = None
        if request.method == "POST" and form.is_valid():
            try:
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
            "can_execute": access.can(request.user, Action.EXECUTE, tool),
        }
        return TemplateResponse(request, "admin/registry/tool/test_run.html", context)


admin.site.unregister(Tool)
admin.site.register(Tool, ToolAdminWithTestRun)


@admin.register(Approval)
class ApprovalAdmin(NoCountAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    """Decision history; the queue itself is the 'Approval queue' page."""

    list_display = [
        "requested_at",
        "tool_name",
        "requester",
        "status",
        "decided_by_name",
        "decided_at",
        "reason",
    ]
    list_filter = ["status", "requested_at"]
    search_fields = ["=execution__id", "=decided_by_name"]
    list_select_related = ["execution"]
    ordering = ["-requested_at"]
    change_list_template = "admin/executions/approval/change_list.html"

    @admin.display(description="Tool")
    def tool_name(self, obj):
        return obj.execution.tool_name

    @admin.display(description="Requested by")
    def requester(self, obj):
        return obj.execution.principal_name

    def get_queryset(self, request):
        return approvals_visible_to(request.user)

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_staff

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_staff

    def get_urls(self):
        return [
            path(
                "queue/",
                self.admin_site.admin_view(self.queue_view),
                name="executions_approval_queue",
            ),
            *super().get_urls(),
        ]

    def queue_view(self, request):
        if request.method == "POST":
            return self._decide(request)
        now = timezone.now()
        pending = list(
            approvals_visible_to(request.user)
            .filter(status=ApprovalStatus.PENDING)
            .order_by("requested_at")[:200]
        )
        rows = []
        for approval in pending:
            execution = approval.execution
            rows.append(
                {
                    "approval": approval,
                    "execution": execution,
                    "tool": execution.tool,
                    "risk": (execution.tool.tool_metadata or {}) if execution.tool else {},
                    "owner": execution.agent.owner.get_username() if execution.agent else "—",
                    "age": now - approval.requested_at,
                    "inputs": json.dumps(execution.input_data, indent=2, sort_keys=True),
                    "refusal": may_decide(request.user, approval),
                }
            )
        history = (
            approvals_visible_to(request.user)
            .exclude(status=ApprovalStatus.PENDING)
            .order_by("-decided_at")[:50]
        )
        context = {
            **self.admin_site.each_context(request),
            "title": "Approval queue",
            "rows": rows,
            "history": history,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/executions/approval/queue.html", context)

    def _decide(self, request):
        approval_id = request.POST.get("approval_id", "")
        decision = request.POST.get("decision")
        try:
            approval = approval_for(request.user, approval_id)
            approval_decide(
                actor=request.user,
                approval=approval,
                approve=decision == "approve",
                reason=request.POST.get("reason", ""),
            )
            verb = "Approved" if decision == "approve" else "Rejected"
            self.message_user(
                request, f"{verb} the call of {approval.execution.tool_name}.", messages.SUCCESS
            )
        except ToolHubError as exc:
            self.message_user(request, exc.message, messages.ERROR)
        return HttpResponseRedirect(reverse("admin:executions_approval_queue"))
