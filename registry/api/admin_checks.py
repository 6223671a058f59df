"""The checks for endpoints only platform admins (or reviewers) may call."""

from __future__ import annotations

from registry import authorization
from toolhub.exceptions import PermissionDenied


def require_platform_admin(user) -> None:
    if not authorization.is_platform_admin(user):
        raise PermissionDenied("Only platform admins may do this.")


def require_admin_or_reviewer(user) -> None:
    if not (authorization.is_platform_admin(user) or authorization.is_reviewer(user)):
        raise PermissionDenied("Only platform admins and reviewers may see this.")
