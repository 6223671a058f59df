"""API for roles, agents, tokens, grants, and role-scoped discovery.

Each resource has its own module (``registry.api.role_views``, ``agent_views``,
``grant_views``, ``discovery_views``; the platform-admin checks are in
``admin_checks``); this module keeps the names callers import from
``registry.api.access_views``."""

from registry.api.admin_checks import (
    require_admin_or_reviewer,
    require_platform_admin,
)
from registry.api.agent_views import (
    AgentAccessMixin,
    AgentDetailView,
    AgentListView,
    AgentTokenDetailView,
    AgentTokenListView,
)
from registry.api.discovery_views import (
    CheckPermissionView,
    RegistryByRoleView,
    RegistryMeView,
    discovery_queryset,
)
from registry.api.grant_views import (
    GrantBulkView,
    GrantDetailView,
    GrantListView,
    GrantsByRoleView,
    GrantsByToolView,
)
from registry.api.role_views import (
    RoleDetailView,
    RoleListView,
)

__all__ = [
    "AgentAccessMixin",
    "AgentDetailView",
    "AgentListView",
    "AgentTokenDetailView",
    "AgentTokenListView",
    "CheckPermissionView",
    "GrantBulkView",
    "GrantDetailView",
    "GrantListView",
    "GrantsByRoleView",
    "GrantsByToolView",
    "RegistryByRoleView",
    "RegistryMeView",
    "RoleDetailView",
    "RoleListView",
    "discovery_queryset",
    "require_admin_or_reviewer",
    "require_platform_admin",
]
