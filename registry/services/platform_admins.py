"""Who counts as a platform admin, and the rule that one must always remain."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import UNUSABLE_PASSWORD_PREFIX
from django.contrib.auth.models import Group, Permission
from django.db.models import Q
from django.utils import timezone

from toolhub.exceptions import Conflict

# Lock-out guard: no change may leave the platform without a person who can
# administer it (grant access, manage agents and roles). Agents do not count:
# the admin site is for people.
LAST_PLATFORM_ADMIN = (
    "This would leave no active person who is a platform admin (a superuser, or "
    "holding registry.grant_tool directly or through a role). Make someone else "
    "a platform admin first."
)


# The right that makes a platform admin (besides being a superuser).
PLATFORM_ADMIN_RIGHT = ("registry", "grant_tool")


def is_platform_admin_right(permission: Permission) -> bool:
    return (permission.content_type.app_label, permission.codename) == PLATFORM_ADMIN_RIGHT


def platform_admins_remain(*, without_users: Iterable = (), without_roles: Iterable = ()) -> bool:
    """Whether an active person other than ``without_users`` is a platform admin
    once the roles ``without_roles`` no longer give ``registry.grant_tool``."""
    app_label, codename = PLATFORM_ADMIN_RIGHT
    right = Permission.objects.filter(content_type__app_label=app_label, codename=codename)
    roles = Group.objects.filter(permissions__in=right).exclude(pk__in=list(without_roles))
    people = get_user_model().objects.filter(is_active=True, agent__isnull=True)
    return (
        people.exclude(pk__in=list(without_users))
        .filter(Q(is_superuser=True) | Q(user_permissions__in=right) | Q(groups__in=roles))
        .filter(can_act_q())
        .exists()
    )


def leaves_no_platform_admin(*, without_users: Iterable = (), without_roles: Iterable = ()):
    """Whether there is a platform admin now, but none without ``without_users`` and
    with ``without_roles`` no longer giving the right: the change would lock out."""
    return platform_admins_remain() and not platform_admins_remain(
        without_users=without_users, without_roles=without_roles
    )


def live_token_q() -> Q:
    """Users holding an API token that is neither revoked nor expired."""
    now = timezone.now()
    # pk not null: the join is an outer one, and a user without tokens would match.
    return (
        Q(api_tokens__pk__isnull=False)
        & Q(api_tokens__revoked_at__isnull=True)
        & (Q(api_tokens__expires_at__isnull=True) | Q(api_tokens__expires_at__gt=now))
    )


def usable_password_q() -> Q:
    """Users who can log in with a password (Django marks an unusable one with '!')."""
    return ~Q(password="") & ~Q(password__startswith=UNUSABLE_PASSWORD_PREFIX)


def can_act_q() -> Q:
    """People who can still act: staff who can log in to the admin, or holding a live
    API token."""
    return (Q(is_staff=True) & usable_password_q()) | live_token_q()


def _keep_a_platform_admin(had: bool) -> None:
    """Raise (rolling the caller's transaction back) when the change just made left
    no platform admin although there was one before."""
    if had and not platform_admins_remain():
        raise Conflict(LAST_PLATFORM_ADMIN, code="last_platform_admin")
