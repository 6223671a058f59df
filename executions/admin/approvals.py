"""Approvals in the admin: the decision history and the approval queue."""

from __future__ import annotations

import json

from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

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
)
from toolhub.exceptions import ToolHubError


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
    fields = [
        "id",
        "status",
        "execution_link",
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
