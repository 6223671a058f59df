"""Writes for access control: roles, agents, tokens and grants, each audited with its actor.

Each concept has its own module (``registry.services.roles``, ``role_memberships``,
``platform_admins``, ``agents``, ``tokens``, ``grants``); this module keeps the names
callers import from ``registry.services.access``. The decision whether someone may act
on a tool is ``registry.access.can``."""

from registry.services.agents import (
    AGENT_USERNAME_PREFIX,
    WEBHOOK_SECRET_MAX_CHARS,
    WEBHOOK_SECRET_MIN_CHARS,
    agent_create,
    agent_snapshot,
    agent_update,
    webhook_problems,
)
from registry.services.grants import (
    grant_create,
    grant_revoke,
    grant_snapshot,
)
from registry.services.platform_admins import (
    LAST_PLATFORM_ADMIN,
    PLATFORM_ADMIN_RIGHT,
    can_act_q,
    is_platform_admin_right,
    leaves_no_platform_admin,
    live_token_q,
    platform_admins_remain,
    usable_password_q,
)
from registry.services.role_memberships import (
    MAX_ROLE_ID,
    audit_membership,
    user_set_roles,
)
from registry.services.roles import (
    INERT_PERMISSIONS,
    PLATFORM_ADMIN_PERMISSIONS,
    REVIEWER_PERMISSIONS,
    ROLE_PERMISSION_APPS,
    ROLE_PERMISSION_EXTRAS,
    TOOL_ACCESS_CODENAMES,
    permissions_by_label,
    role_create,
    role_delete,
    role_permission_choices,
    role_snapshot,
    role_update,
)
from registry.services.tokens import (
    token_issue,
    token_revoke,
    token_snapshot,
)

__all__ = [
    "AGENT_USERNAME_PREFIX",
    "INERT_PERMISSIONS",
    "LAST_PLATFORM_ADMIN",
    "MAX_ROLE_ID",
    "PLATFORM_ADMIN_PERMISSIONS",
    "PLATFORM_ADMIN_RIGHT",
    "REVIEWER_PERMISSIONS",
    "ROLE_PERMISSION_APPS",
    "ROLE_PERMISSION_EXTRAS",
    "TOOL_ACCESS_CODENAMES",
    "WEBHOOK_SECRET_MAX_CHARS",
    "WEBHOOK_SECRET_MIN_CHARS",
    "agent_create",
    "agent_snapshot",
    "agent_update",
    "audit_membership",
    "can_act_q",
    "grant_create",
    "grant_revoke",
    "grant_snapshot",
    "is_platform_admin_right",
    "leaves_no_platform_admin",
    "live_token_q",
    "permissions_by_label",
    "platform_admins_remain",
    "role_create",
    "role_delete",
    "role_permission_choices",
    "role_snapshot",
    "role_update",
    "token_issue",
    "token_revoke",
    "token_snapshot",
    "usable_password_q",
    "user_set_roles",
    "webhook_problems",
]
