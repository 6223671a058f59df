"""The tool list's actions: activate, deactivate, and decide on pending definitions."""

from __future__ import annotations

from django.contrib import admin, messages

from registry import authorization
from registry.services import pinning
from registry.services import tools as services
from toolhub.exceptions import ToolHubError


class ToolActionsMixin:
    """The actions ``ToolAdmin.actions`` names."""

    @admin.action(description="Activate selected tools", permissions=["change"])
    def activate_tools(self, request, queryset):
        for tool in queryset:
            services.tool_activate(actor=request.user, tool=tool)
        self.message_user(request, f"Activated {queryset.count()} tool(s).", messages.SUCCESS)

    @admin.action(description="Deactivate selected tools", permissions=["change"])
    def deactivate_tools(self, request, queryset):
        for tool in queryset:
            services.tool_deactivate(actor=request.user, tool=tool)
        self.message_user(request, f"Deactivated {queryset.count()} tool(s).", messages.SUCCESS)

    def _decide(self, request, queryset, decide, verb: str) -> None:
        if not authorization.is_platform_admin(request.user):
            self.message_user(
                request, "Only platform admins decide on definitions.", messages.ERROR
            )
            return
        done = 0
        for tool in queryset.filter(quarantined_at__isnull=False):
            try:
                decide(actor=request.user, tool=tool, reason=f"{verb} in the admin")
                done += 1
            except ToolHubError as exc:
                self.message_user(request, f"{tool.name}: {exc.message}", messages.ERROR)
        self.message_user(request, f"{verb} the pending definition of {done} tool(s).")

    @admin.action(
        description="Approve pending definitions (platform admins)", permissions=["change"]
    )
    def approve_pending_definitions(self, request, queryset):
        self._decide(request, queryset, pinning.tool_definition_approve, "Approved")

    @admin.action(
        description="Reject pending definitions (platform admins)", permissions=["change"]
    )
    def reject_pending_definitions(self, request, queryset):
        self._decide(request, queryset, pinning.tool_definition_reject, "Rejected")
