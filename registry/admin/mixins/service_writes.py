"""Admin writes that go through the services: platform-admin-only writes and service errors as messages."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db import transaction
from django.http import HttpResponseRedirect

from registry import authorization
from toolhub.exceptions import ToolHubError


class PlatformAdminWritesMixin:
    """Who may do what is decided by registry.authorization, as in the API: platform admins
    write, reviewers read."""

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def has_view_permission(self, request, obj=None):
        return authorization.is_platform_admin(request.user) or authorization.is_reviewer(
            request.user
        )

    def has_add_permission(self, request):
        return authorization.is_platform_admin(request.user)

    def has_change_permission(self, request, obj=None):
        return authorization.is_platform_admin(request.user)

    def has_delete_permission(self, request, obj=None):
        return authorization.is_platform_admin(request.user)


class ServiceErrorsMixin:
    """A change form whose writes go through the services: a refusal of theirs
    (``ToolHubError``) rolls the whole form back and is shown as a message."""

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            with transaction.atomic():
                return super().changeform_view(request, object_id, form_url, extra_context)
        except ToolHubError as exc:
            report_service_error(self, request, exc)
            return HttpResponseRedirect(request.get_full_path())


def report_service_error(modeladmin: admin.ModelAdmin, request, exc: ToolHubError) -> None:
    detail = ""
    if isinstance(exc.details, list):
        detail = "; ".join(
            f"{d.get('field')}: {d.get('message')}" if isinstance(d, dict) else str(d)
            for d in exc.details
        )
    modeladmin.message_user(request, f"{exc.message} {detail}".strip(), level=messages.ERROR)
