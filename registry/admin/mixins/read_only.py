"""Read-only admin for records: no add, change or delete."""

from __future__ import annotations


class ReadOnlyAdminMixin:
    """A record viewer: nobody, superusers included, may add, change or delete."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
