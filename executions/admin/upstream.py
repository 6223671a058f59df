"""People's upstream connections in the admin: who is connected to which provider, since
when, refreshed when, revoked when and by whom. Never a token. Platform admins revoke
(the action asks the provider's revocation endpoint first, as the person's Disconnect
button does: ``executions.services.upstream_accounts``); reviewers read. Nobody adds or
edits one here: a person connects on their own page."""

from __future__ import annotations

from django.contrib import admin, messages

from executions.services.upstream_accounts import connection_disconnect
from registry import authorization
from registry.admin.mixins import GuardedChangeListMixin, ReadOnlyAdminMixin
from registry.models import UpstreamConnection
from registry.policy import policy_allows
from toolhub.exceptions import ToolHubError


@admin.register(UpstreamConnection)
class UpstreamConnectionAdmin(GuardedChangeListMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "person",
        "provider",
        "scopes",
        "created_at",
        "expires_at",
        "refreshed_at",
        "revoked_at",
        "revoked_by",
    ]
    list_filter = ["provider", "revoked_at"]
    search_fields = ["person__username", "provider__slug", "provider__name"]
    list_select_related = ["person", "provider", "revoked_by"]
    fields = [
        "person",
        "provider",
        "scopes",
        "expires_at",
        "has_refresh_token",
        "created_at",
        "created_by",
        "refreshed_at",
        "refreshed_by",
        "revoked_at",
        "revoked_by",
    ]
    readonly_fields = fields
    actions = ["revoke"]

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def has_view_permission(self, request, obj=None):
        user = request.user
        return authorization.is_platform_admin(user) or authorization.is_reviewer(user)

    def has_revoke_permission(self, request):
        return policy_allows(actor=request.user, action="upstream_connection.revoke")

    @admin.display(boolean=True, description="Refresh token")
    def has_refresh_token(self, obj):
        return obj.has_refresh_token

    @admin.action(
        description="Revoke the selected connections (at the provider too)",
        permissions=["revoke"],
    )
    def revoke(self, request, queryset):
        revoked, problems = 0, []
        for connection in queryset.select_related("provider", "person"):
            if connection.revoked_at is not None:
                continue
            try:
                problem = connection_disconnect(actor=request.user, connection=connection)
            except ToolHubError as exc:
                messages.error(request, exc.message)
                return
            revoked += 1
            if problem:
                problems.append(f"{connection}: {problem}")
        messages.success(request, f"Revoked {revoked} connection(s).")
        for problem in problems:
            messages.warning(request, f"The provider did not revoke the tokens of {problem}.")
