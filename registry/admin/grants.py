"""Per-tool grants, edited inline on a tool."""

from __future__ import annotations

from django.contrib import admin

from registry import authorization
from registry.models import ToolGrant


class ToolGrantInline(admin.TabularInline):
    """Grant and revoke on the tool's page. Only platform admins see and use it."""

    model = ToolGrant
    extra = 0
    fields = ["role", "action", "granted_by", "created_at"]
    readonly_fields = ["granted_by", "created_at"]
    verbose_name = "grant"
    verbose_name_plural = "Grants (roles that may read, execute or manage this tool)"

    def has_view_permission(self, request, obj=None):
        return authorization.is_platform_admin(request.user) or authorization.is_reviewer(
            request.user
        )

    def has_add_permission(self, request, obj=None):
        return authorization.is_platform_admin(request.user)

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return authorization.is_platform_admin(request.user)
