"""Approvals in the admin: the decision history and the approval queue."""

from __future__ import annotations

import json

from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from executions.admin.inputs import arguments_html, arguments_text
from executions.models import Approval, ApprovalStatus
from executions.services.approvals import (
    approval_decide,
    approval_for,
    approvals_visible_to,
    may_decide,
)
from registry.admin.mixins import (
    NoCountAdminMixin,
    ReadOnlyAdminMixin,
    time_range_filter,
)
from toolhub.exceptions import ToolHubError

NOT_RECORDED = "Not recorded (the call was held before ToolHub recorded why)."


def approval_why(approval: Approval) -> str:
    """Which condition held the call for a person, in words (with the condition matched)."""
    if not approval.required_because:
        return NOT_RECORDED
    text = approval.get_required_because_display() + "."
    if approval.condition_matched:
        return format_html(
            '{}<pre class="approval-condition">{}</pre>',
            text,
            json.dumps(approval.condition_matched, indent=2, sort_keys=True),
        )
    return text


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
    list_filter = ["status", time_range_filter("requested_at", "requested", "time asked")]
    search_fields = ["=execution__id", "=decided_by_name"]
    list_select_related = ["execution"]
    ordering = ["-requested_at"]
    change_list_template = "admin/executions/approval/change_list.html"
    fields = [
        "id",
        "status",
        "execution_link",
        "why",
        "arguments",
        "input_hash",
        "requested_at",
        "expires_at",
        "decided_by_name",
        "decided_at",
        "reason",
    ]
    readonly_fields = fields

    @admin.display(description="Execution")
    def execution_link(self, obj):
        execution = obj.execution
        url = reverse("admin:executions_execution_change", args=[execution.pk])
        return format_html(
            '<a href="{}">{} by {} ({})</a>',
            url,
            execution.tool_name,
            execution.principal_name,
            execution.get_status_display(),
        )

    @admin.display(description="Why it needs approval")
    def why(self, obj):
        return approval_why(obj)

    @admin.display(description="Arguments (secrets removed)")
    def arguments(self, obj):
        return arguments_html(obj.execution)

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
            sent, defaults = arguments_text(execution)
            rows.append(
                {
                    "approval": approval,
                    "execution": execution,
                    "tool": execution.tool,
                    "risk": (execution.tool.tool_metadata or {}) if execution.tool else {},
                    "owner": execution.agent.owner.get_username() if execution.agent else "—",
                    "age": now - approval.requested_at,
                    "inputs": sent,
                    "defaults": defaults,
                    "why": approval_why(approval),
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
        if decision not in ("approve", "reject"):
            self.message_user(
                request, "Choose approve or reject; nothing was decided.", messages.ERROR
            )
            return HttpResponseRedirect(reverse("admin:executions_approval_queue"))
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
