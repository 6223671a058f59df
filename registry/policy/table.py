"""The table: who may make which write (see ``registry.policy``)."""

from __future__ import annotations

from dataclasses import dataclass

from registry import authorization
from registry.models import Action, Tool
from registry.rights import RIGHTS_BY_KEY
from toolhub.exceptions import PermissionDenied

ADMIN = "grant_access"  # the right that makes a platform admin
MANAGE = Action.MANAGE.value


@dataclass(frozen=True)
class Rule:
    """What one write takes. ``refusal`` may name the tool as ``{tool}``."""

    right: str | None  # a key of rights.RIGHTS_BY_KEY
    grant: str | None  # a grant the actor needs on the tool written
    refusal: str
    own_control: bool = False  # governs callers' calls: agents never loosen their own
    owner_may: bool = False  # the person who owns the subject (an agent) may too


POLICY: dict[str, Rule] = {
    "tool.create": Rule(
        "register_tools",
        None,
        "Only platform admins and the 'Register tools' right register tools.",
    ),
    "tool.edit": Rule(
        "edit_tools",
        MANAGE,
        "Changing '{tool}' takes the right 'Edit tool definitions' and a manage grant on it.",
    ),
    "tool.rename": Rule(
        "register_tools",
        MANAGE,
        "Renaming '{tool}' takes the right 'Register tools' (as creating a tool of that "
        "name would): importers and syncs find their tools by name.",
    ),
    "tool.reserved_name": Rule(
        ADMIN,
        None,
        "Names of the form '<namespace>__<tool>' belong to imported and synced tools (an "
        "MCP server's, an OpenAPI namespace's): only platform admins give a tool one.",
    ),
    "tool.deactivate": Rule(None, MANAGE, "You may not manage '{tool}'."),
    "tool.delete": Rule("delete_tools", MANAGE, "Only platform admins may hard-delete tools."),
    "tool.what_runs": Rule(
        ADMIN,
        MANAGE,
        "Only platform admins change what '{tool}' runs (its type, where its calls go, "
        "its function, server or program).",
    ),
    "tool.risk": Rule(
        ADMIN,
        MANAGE,
        "Only platform admins change the risk of '{tool}' (whether its calls fail closed), "
        "lend it a connection the operator holds or callers' own upstream accounts, or say "
        "where callers' per-call secrets go.",
    ),
    "tool.credentials": Rule(
        ADMIN,
        MANAGE,
        "'{tool}' holds secret configs or takes per-call secrets: only platform admins "
        "change where its calls go or how its credentials are sent, since the secrets go "
        "with them.",
    ),
    "tool.approval": Rule(
        ADMIN, MANAGE, "Only platform admins may change a tool's approval settings.", True
    ),
    "tool.concurrency": Rule(
        "edit_tools",
        MANAGE,
        "Changing how many calls of '{tool}' run at once takes the right 'Edit tool "
        "definitions' and a manage grant on it.",
        True,
    ),
    "tool.approved_definition": Rule(
        ADMIN,
        MANAGE,
        "'{tool}' requires human approval: only platform admins change its parameters, "
        "configs and type, since what needs approval depends on them.",
    ),
    "parameter.write": Rule(
        "edit_tools",
        MANAGE,
        "Changing the parameters of '{tool}' takes the right 'Edit tool definitions' and a "
        "manage grant on it.",
    ),
    "config.write": Rule(
        "edit_tools",
        MANAGE,
        "Changing the configs of '{tool}' takes the right 'Edit tool definitions' and a "
        "manage grant on it.",
    ),
    "grant.write": Rule(ADMIN, None, "Only platform admins grant and revoke access to tools."),
    "guard.write": Rule(ADMIN, None, "Only platform admins may change guards.", True),
    "rate_limit.write": Rule(
        "rate_limits",
        MANAGE,
        "Changing the rate limits of '{tool}' takes the right 'Set rate limits' and a "
        "manage grant on it.",
        True,
    ),
    "mcp_server.write": Rule(ADMIN, None, "Only platform admins register and change MCP servers."),
    "toolset.write": Rule(ADMIN, None, "Only platform admins may change toolsets."),
    "definition.decide": Rule(
        ADMIN, None, "Only platform admins approve or reject a tool's definition."
    ),
    # Principals and what they act with. Each of these writes can hand out any right
    # (an agent in the platform-admin role, a token for an admin, a role given "Grant
    # access"), so each takes a platform admin, whatever right the admin pages show.
    "agent.write": Rule(ADMIN, None, "Only platform admins may do this."),
    "role.write": Rule(ADMIN, None, "Only platform admins may do this."),
    "membership.write": Rule(
        ADMIN, None, "Only platform admins change which roles an agent or a person holds."
    ),
    "token.write": Rule(
        ADMIN,
        None,
        "Only platform admins and the agent's owner manage its tokens.",
        owner_may=True,
    ),
    # OAuth (registry.oauth): a person's consent is theirs to withdraw, and any platform
    # admin's; a client is registered by the client itself (RFC 7591, when on) or an admin.
    "consent.revoke": Rule(
        ADMIN,
        None,
        "Only the person who gave a consent, or a platform admin, may revoke it.",
        owner_may=True,
    ),
    "oauth_client.write": Rule(
        ADMIN, None, "Only platform admins register, change and remove OAuth clients."
    ),
    # People's own upstream accounts (registry.models.upstream): a provider holds ToolHub's
    # client secret there and decides where people are sent to sign in; a connection is
    # its person's to end, and any platform admin's.
    "upstream_provider.write": Rule(
        ADMIN, None, "Only platform admins register, change and remove upstream providers."
    ),
    "upstream_connection.revoke": Rule(
        ADMIN,
        None,
        "Only the person whose upstream account it is, or a platform admin, may disconnect it.",
        owner_may=True,
    ),
    # A mapping hands its role (any right) and admin access to everyone in a group.
    "sso_mapping.write": Rule(
        ADMIN, None, "Only platform admins map identity provider groups to roles."
    ),
}
# Which rule a write of all tools (tool None) with a grant in its row falls back to.
ALL_TOOLS_REFUSAL = "Only platform admins may set {what} for all tools."
OWN_CONTROL_REFUSAL = (
    "An agent may not loosen a control over its own calls ({what}): ask a platform admin."
)


def _holds_right(user, key: str) -> bool:
    if authorization.is_platform_admin(user):  # a platform admin holds every right
        return True
    if key == ADMIN or not (user.is_authenticated and user.is_active):
        return False
    return all(user.has_perm(label) for label in RIGHTS_BY_KEY[key].permissions)


def _is_agent(user) -> bool:
    from registry.models import Agent

    return Agent.objects.filter(user_id=user.pk).exists()


def _governs_own_calls(actor, tool: Tool | None) -> bool:
    """Whether a control on ``tool`` (all tools when None) applies to calls ``actor`` makes."""
    if not _is_agent(actor):
        return False
    return tool is None or authorization.can(actor, Action.EXECUTE, tool)


def _refusal(action: str, tool: Tool | None, fields) -> PermissionDenied | None:
    rule = POLICY[action]
    name = tool.name if tool is not None else "all tools"
    details = [{"field": f, "message": "Not yours to change."} for f in fields] or None
    return PermissionDenied(rule.refusal.format(tool=name), details=details)


def _is_owner(actor, owner) -> bool:
    """Whether ``actor`` is ``owner``, an active person (an agent owns nothing)."""
    return (
        owner is not None
        and actor.is_authenticated
        and actor.is_active
        and actor.pk == owner.pk
        and not _is_agent(actor)
    )


def policy_refusal(
    *, actor, action: str, tool: Tool | None = None, loosens: bool = False, fields=(), owner=None
) -> PermissionDenied | None:
    """Why ``actor`` may not make the write ``action`` (None when it may). ``owner``: the
    person who owns what the write is about (an agent, for its tokens), for rows that let
    the owner write too."""
    rule = POLICY[action]
    if actor is None:
        return None
    if rule.owner_may and _is_owner(actor, owner):
        return None
    if (
        rule.grant
        and tool is None
        and rule.right != ADMIN
        and not authorization.is_platform_admin(actor)
    ):
        what = action.split(".")[0].replace("_", " ") + "s"
        return PermissionDenied(ALL_TOOLS_REFUSAL.format(what=what))
    if rule.grant and tool is not None and not authorization.can(actor, rule.grant, tool):
        return PermissionDenied(f"You may not {rule.grant} '{tool.name}'.")
    if rule.right and not _holds_right(actor, rule.right):
        return _refusal(action, tool, fields)
    if rule.own_control and loosens and _governs_own_calls(actor, tool):
        what = action.split(".")[0].replace("_", " ")
        return PermissionDenied(OWN_CONTROL_REFUSAL.format(what=what), code="own_control")
    return None


def policy_check(
    *, actor, action: str, tool: Tool | None = None, loosens: bool = False, fields=(), owner=None
) -> None:
    """Raise ``PermissionDenied`` unless ``actor`` may make the write ``action``."""
    refusal = policy_refusal(
        actor=actor, action=action, tool=tool, loosens=loosens, fields=fields, owner=owner
    )
    if refusal is not None:
        raise refusal


def policy_allows(
    *, actor, action: str, tool: Tool | None = None, loosens: bool = False, owner=None
) -> bool:
    """For faces (admin pages, API hints): may ``actor`` make the write ``action``?"""
    return (
        policy_refusal(actor=actor, action=action, tool=tool, loosens=loosens, owner=owner) is None
    )
