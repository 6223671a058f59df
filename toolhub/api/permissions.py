"""API permission classes shared by the apps."""

from rest_framework.permissions import SAFE_METHODS, BasePermission


class StaffWritesOnly(BasePermission):
    """Any authenticated caller may read; writes need a staff user."""

    message = "Only staff users may change the catalog."

    def has_permission(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return False
        return request.method in SAFE_METHODS or request.user.is_staff
