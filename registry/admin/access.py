"""Agents, roles, tokens and grants in the admin. Every change goes through the access services.

Each has its own module (``registry.admin.agents``, ``api_tokens``, ``roles``,
``grants``); importing this module registers them (the agent admin is registered by
``executions.admin.tools``) and keeps the names callers import from
``registry.admin.access``."""

from registry.admin.agents import (
    AgentAdmin,
    AgentForm,
    AgentViewForm,
)
from registry.admin.api_tokens import (
    ApiTokenAddForm,
    ApiTokenAdmin,
    token_page,
)
from registry.admin.grants import ToolGrantInline
from registry.admin.roles import (
    RoleAdmin,
    RoleForm,
)

__all__ = [
    "AgentAdmin",
    "AgentForm",
    "AgentViewForm",
    "ApiTokenAddForm",
    "ApiTokenAdmin",
    "RoleAdmin",
    "RoleForm",
    "ToolGrantInline",
    "token_page",
]
