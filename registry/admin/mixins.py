"""Admin plumbing shared by the registry and executions admins."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.paginator import Paginator
from django.utils.functional import cached_property

from toolhub.exceptions import ToolHubError


class ReadOnlyAdminMixin:
    """A record viewer: nobody, superusers included, may add, change or delete."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class NoCountPaginator(Paginator):
    """Never ``COUNT(*)`` a big table: count only as far as the page after this one.

    The changelist learns "there is a next page" from one extra row, so page
    links stop one past the current page instead of at the true total.
    """

    def __init__(self, *args, page_number: int = 1, **kwargs):
        super().__init__(*args, **kwargs)
        self._page_number = max(page_number, 1)

    @cached_property
    def count(self):
        offset = (self._page_number - 1) * self.per_page
        seen = len(self.object_list[offset : offset + self.per_page + 1])
        return offset + seen


class NoCountAdminMixin:
    show_full_result_count = False
    paginator = NoCountPaginator

    def get_paginator(self, request, queryset, per_page, orphans=0, allow_empty_first_page=True):
        try:
            page_number = int(request.GET.get("p", 1))
        except ValueError:
            page_number = 1
        return NoCountPaginator(
            queryset,
            per_page,
            orphans=orphans,
            allow_empty_first_page=allow_empty_first_page,
            page_number=page_number,
        )


def report_service_error(modeladmin: admin.ModelAdmin, request, exc: ToolHubError) -> None:
    detail = ""
    if isinstance(exc.details, list):
        detail = "; ".join(
            f"{d.get('field')}: {d.get('message')}" if isinstance(d, dict) else str(d)
            for d in exc.details
        )
    modeladmin.message_user(request, f"{exc.message} {detail}".strip(), level=messages.ERROR)
