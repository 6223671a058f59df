"""The tool catalog's model admin: what it lists, and who sees and changes which tool."""

from __future__ import annotations

from django.contrib import admin

from registry import authorization
from registry.admin.forms import ToolForm
from registry.admin.grants import ToolGrantInline
from registry.admin.mixins import GuardedChangeListMixin, ServiceErrorsMixin
from registry.admin.tools.actions import ToolActionsMixin
from registry.admin.tools.display import ToolDisplayMixin
from registry.admin.tools.filters import CategoryFilter, QuarantineFilter
from registry.admin.tools.inlines import (
    RateLimitRuleInline,
    ToolConfigInline,
    ToolParameterInline,
    allows,
)
from registry.admin.tools.writes import ToolWritesMixin
from registry.models import Action, Tool
from registry.models.tools import TOOL_CONTROL_FIELDS, TOOL_IDENTITY_FIELDS
from registry.policy import APPROVAL_FIELDS, policy_allows


class ToolAdmin(
    ToolDisplayMixin,
    ToolWritesMixin,
    ToolActionsMixin,
    GuardedChangeListMixin,
    ServiceErrorsMixin,
    admin.ModelAdmin,
):
    """The catalog. Platform admins and reviewers see every tool; other staff see the
    tools they may read and change those they may manage (a ``manage`` grant), as the
    API lets them, and change those ``registry.policy`` lets them (a ``manage`` grant and
    the right 'Edit tool definitions'). Creating and deleting tools and granting stay with
    platform admins.

    Not registered here: ``executions.admin.tools`` registers it, composed with what the
    executions app adds to a tool's page (the test run, its records, a command's sandbox),
    so the site has one admin for ``Tool`` and nobody replaces another's."""

    form = ToolForm
    list_display = [
        "name",
        "type",
        "version",
        "category_display",
        "is_active",
        "requires_approval",
        "quarantined_display",
        "updated_at",
    ]
    list_filter = ["type", "is_active", "requires_approval", QuarantineFilter, CategoryFilter]
    search_fields = ["name", "description"]
    ordering = ["name"]
    inlines = [ToolParameterInline, ToolConfigInline, ToolGrantInline, RateLimitRuleInline]
    actions = [
        "activate_tools",
        "deactivate_tools",
        "approve_pending_definitions",
        "reject_pending_definitions",
    ]
    readonly_fields = [
        "id",
        "created_by",
        "created_at",
        "updated_at",
        "audit_trail",
        "input_schema_display",
        "failure_mode",
        "definition_review",
    ]
    fieldsets = [
        (None, {"fields": list(TOOL_IDENTITY_FIELDS)}),
        ("Execution controls", {"fields": [*TOOL_CONTROL_FIELDS, "failure_mode"]}),
        ("Pinned definition", {"fields": ["definition_review"]}),
        (
            "Record",
            {
                "fields": [
                    "id",
                    "created_by",
                    "created_at",
                    "updated_at",
                    "audit_trail",
                    "input_schema_display",
                ]
            },
        ),
    ]

    # Per-tool rights (guardian object permissions through registry.authorization).

    @staticmethod
    def _sees_all(request) -> bool:
        return authorization.is_platform_admin(request.user) or authorization.is_reviewer(
            request.user
        )

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if self._sees_all(request):
            return queryset
        return authorization.restrict(queryset, request.user, Action.READ)

    def _reads_some(self, request) -> bool:
        return (
            request.user.is_staff
            and authorization.restrict(Tool.objects.all(), request.user, Action.READ).exists()
        )

    def has_module_permission(self, request):
        return super().has_module_permission(request) or self._reads_some(request)

    def has_view_permission(self, request, obj=None):
        if super().has_view_permission(request, obj):
            return True
        if obj is None:
            return self._reads_some(request)
        return authorization.can(request.user, Action.READ, obj)

    def has_change_permission(self, request, obj=None):
        if obj is None:
            return super().has_change_permission(request, obj)
        return allows(request, "tool.edit", obj)

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if not policy_allows(actor=request.user, action="tool.approval", tool=obj):
            # registry.policy, as in the API: who may change approval settings.
            fields += [f for f in APPROVAL_FIELDS if f not in fields]
        return fields
