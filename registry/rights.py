"""Platform rights in plain words: what a role's permissions let its members do.

A role carries Django model permissions (``registry.grant_tool``, ...); the
admin's role page offers them grouped into the rights below, each saying what
it lets a person do. Rights on tools themselves (read, execute, manage,
approve) are not among them: they are grants, given on each tool's page (or
for all tools), and decide which tools a member may see, call, change or
approve calls of.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PlatformRight:
    key: str
    title: str
    lets: str  # what it lets a member do, in words
    permissions: tuple[str, ...]  # app_label.codename


PLATFORM_RIGHTS = (
    PlatformRight(
        "grant_access",
        "Grant access (platform admin)",
        "Give roles read, execute, manage or approve on tools, and revoke it. A role with "
        "this right makes its members platform admins.",
        (
            "registry.grant_tool",
            "registry.view_toolgrant",
            "registry.add_toolgrant",
            "registry.delete_toolgrant",
        ),
    ),
    PlatformRight(
        "register_tools",
        "Register tools",
        "Create tools by hand or import them (OpenAPI, tool files, MCP servers, Python).",
        ("registry.add_tool", "registry.add_toolparameter", "registry.add_toolconfig"),
    ),
    PlatformRight(
        "edit_tools",
        "Edit tool definitions",
        "Change a tool's settings, parameters and configs, on tools they may manage "
        "(secret values stay write-only).",
        (
            "registry.change_tool",
            "registry.view_toolparameter",
            "registry.change_toolparameter",
            "registry.delete_toolparameter",
            "registry.view_toolconfig",
            "registry.change_toolconfig",
            "registry.delete_toolconfig",
        ),
    ),
    PlatformRight(
        "delete_tools",
        "Delete tools never called",
        "Remove a tool that has no executions (a tool with executions can only be deactivated).",
        ("registry.delete_tool",),
    ),
    PlatformRight(
        "agents",
        "See agents",
        "See agents, their owners, roles and webhooks in the admin. Creating, changing and "
        "deactivating agents takes a platform admin: an agent can be given any role.",
        ("registry.view_agent", "registry.add_agent", "registry.change_agent"),
    ),
    PlatformRight(
        "tokens",
        "See API tokens",
        "See API tokens (never their values) in the admin. Issuing and revoking them takes a "
        "platform admin (or, for an agent's tokens, its owner): a token acts with all its "
        "user's rights.",
        ("registry.view_apitoken", "registry.add_apitoken", "registry.change_apitoken"),
    ),
    PlatformRight(
        "roles",
        "See roles",
        "See roles, their rights and members in the admin. Creating, changing and deleting "
        "roles takes a platform admin: a role can carry any right.",
        ("registry.view_role", "registry.add_role", "registry.change_role"),
    ),
    PlatformRight(
        "rate_limits",
        "Set rate limits",
        "Add, change and remove rate limits on tools.",
        (
            "registry.view_ratelimitrule",
            "registry.add_ratelimitrule",
            "registry.change_ratelimitrule",
            "registry.delete_ratelimitrule",
        ),
    ),
    PlatformRight(
        "mcp_servers",
        "Manage MCP servers",
        "Register MCP servers and sync the tools they offer.",
        (
            "registry.view_mcpserver",
            "registry.add_mcpserver",
            "registry.change_mcpserver",
            "registry.delete_mcpserver",
        ),
    ),
    PlatformRight(
        "review",
        "Review everything, read-only (reviewer)",
        "See every tool, execution, approval and audit event, export them, and verify the "
        "audit log (Verify now); change nothing.",
        ("registry.review_all",),
    ),
    PlatformRight(
        "audit_log",
        "Read the audit log",
        "Open and export the audit log and see its integrity panel.",
        ("registry.view_auditevent",),
    ),
    PlatformRight(
        "executions",
        "Read execution records",
        "Open the execution records of calls to tools they may read.",
        ("executions.view_execution",),
    ),
    PlatformRight(
        "approvals",
        "See the approval history",
        "Open past and pending approvals (deciding one takes an approve grant on its tool).",
        ("executions.view_approval",),
    ),
    PlatformRight(
        "people",
        "See people's accounts",
        "See the people with accounts and their roles (accounts are managed by superusers).",
        ("auth.view_user",),
    ),
)
RIGHTS_BY_KEY = {right.key: right for right in PLATFORM_RIGHTS}


def rights_held(labels: set[str]) -> list[str]:
    """The keys of the rights whose permissions are all in ``labels``."""
    return [r.key for r in PLATFORM_RIGHTS if set(r.permissions) <= labels]


def permissions_of(keys) -> list[str]:
    """The permissions the rights ``keys`` stand for."""
    return list(dict.fromkeys(label for key in keys for label in RIGHTS_BY_KEY[key].permissions))
