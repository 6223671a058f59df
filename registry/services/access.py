"""Writes for access control: roles, agents, tokens and grants, each audited with its actor."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import UNUSABLE_PASSWORD_PREFIX
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from registry import crypto
from registry.access import CODENAMES
from registry.models import (
    Action,
    Agent,
    ApiToken,
    RoleProfile,
    Tool,
    ToolGrant,
    ToolGroupObjectPermission,
)
from registry.models.tokens import generate_token, hash_token
from registry.services.audit import audit_record
from registry.services.validation import full_clean, raise_invalid
from toolhub.api.params import parse_id
from toolhub.exceptions import Conflict, InvalidInput

# Model permissions that make a role a platform admin or a reviewer. Rights on
# tools themselves (view/execute/manage) are given through grants, never here.
PLATFORM_ADMIN_PERMISSIONS = [
    "registry.add_tool",
    "registry.change_tool",
    "registry.delete_tool",
    "registry.grant_tool",
    "registry.view_tool",
    "registry.view_toolparameter",
    "registry.add_toolparameter",
    "registry.change_toolparameter",
    "registry.delete_toolparameter",
    "registry.view_toolconfig",
    "registry.add_toolconfig",
    "registry.change_toolconfig",
    "registry.delete_toolconfig",
    "registry.view_agent",
    "registry.add_agent",
    "registry.change_agent",
    "registry.view_apitoken",
    "registry.add_apitoken",
    "registry.change_apitoken",
    "registry.view_role",
    "registry.add_role",
    "registry.change_role",
    "registry.view_toolgrant",
    "registry.add_toolgrant",
    "registry.delete_toolgrant",
    "registry.view_auditevent",
]
REVIEWER_PERMISSIONS = [
    "registry.review_all",
    "registry.view_tool",
    "registry.view_toolparameter",
    "registry.view_toolconfig",
    "registry.view_agent",
    "registry.view_apitoken",
    "registry.view_role",
    "registry.view_toolgrant",
    "registry.view_auditevent",
    "registry.view_ratelimitrule",
    "registry.view_mcpserver",
    "executions.view_execution",
    "executions.view_approval",
    "auth.view_user",
]
TOOL_ACCESS_CODENAMES = set(CODENAMES.values())
# What a role's permissions may be drawn from (roles are managed by platform admins,
# who are not superusers).
ROLE_PERMISSION_APPS = ("registry", "executions")
ROLE_PERMISSION_EXTRAS = ("auth.view_user",)
# Rights nothing honours: the audit log and execution records are append-only
# (the admin and the API never add, change or delete them, for anyone). A role
# holding them would look more powerful than it is.
INERT_PERMISSIONS = (
    "registry.add_auditevent",
    "registry.change_auditevent",
    "registry.delete_auditevent",
    "executions.add_execution",
    "executions.change_execution",
    "executions.delete_execution",
)


def _labels_q(labels: Iterable[str]) -> Q:
    """The permissions named ``app_label.codename`` in ``labels``, as one filter."""
    found = Q()
    for label in labels:
        app_label, codename = label.split(".", 1)
        found |= Q(content_type__app_label=app_label, codename=codename)
    return found


def role_permission_choices():
    """The permissions a role may carry: ToolHub's own (not rights on tools, which are
    grants) and the extras above. What the admin's role form offers."""
    return (
        Permission.objects.filter(
            Q(content_type__app_label__in=ROLE_PERMISSION_APPS) | _labels_q(ROLE_PERMISSION_EXTRAS)
        )
        .exclude(content_type__app_label="registry", codename__in=TOOL_ACCESS_CODENAMES)
        .exclude(_labels_q(INERT_PERMISSIONS))
        .select_related("content_type")
    )


def permissions_by_label(labels: Iterable[str]) -> list[Permission]:
    found = []
    for label in labels:
        app_label, codename = label.split(".")
        found.append(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return found


# Roles


def role_snapshot(role: Group) -> dict:
    profile = getattr(role, "profile", None)
    return {
        "id": role.pk,
        "name": role.name,
        "description": profile.description if profile else "",
        "permissions": sorted(
            f"{p.content_type.app_label}.{p.codename}"
            for p in role.permissions.select_related("content_type")
        ),
    }


@transaction.atomic
def role_create(
    *, actor, name: str, description: str = "", permissions: Iterable[str] = ()
) -> Group:
    name = (name or "").strip()
    if not name or len(name) > 150:
        raise_invalid(
            [{"field": "name", "message": "Give a name of 1 to 150 characters.", "code": "invalid"}]
        )
    if Group.objects.filter(name=name).exists():
        raise Conflict(
            f"A role named '{name}' already exists.",
            code="duplicate_name",
            details=[{"field": "name", "message": "Already in use.", "code": "unique"}],
        )
    role = Group.objects.create(name=name)
    RoleProfile.objects.create(group=role, description=description)
    if permissions:
        role.permissions.set(_platform_permissions(permissions))
    audit_record(actor=actor, action="role.created", target=role, after=role_snapshot(role))
    return role


def _platform_permissions(labels: Iterable[str]) -> list[Permission]:
    perms = []
    for label in labels:
        if "." not in label:
            raise_invalid(
                [
                    {
                        "field": "permissions",
                        "message": f"'{label}' is not app_label.codename.",
                        "code": "invalid",
                    }
                ]
            )
        app_label, codename = label.split(".", 1)
        if app_label not in ROLE_PERMISSION_APPS and label not in ROLE_PERMISSION_EXTRAS:
            # auth.change_user and the like would let a platform admin make
            # anyone (themselves included) a superuser through the admin.
            raise_invalid(
                [
                    {
                        "field": "permissions",
                        "message": (
                            f"'{label}' is not a ToolHub permission: roles carry registry.* "
                            "and executions.* permissions (and auth.view_user); accounts "
                            "are managed by superusers."
                        ),
                        "code": "not_allowed",
                    }
                ]
            )
        if label in INERT_PERMISSIONS:
            raise_invalid(
                [
                    {
                        "field": "permissions",
                        "message": (
                            f"'{label}' does nothing: audit events and execution records "
                            "are append-only for everyone."
                        ),
                        "code": "not_allowed",
                    }
                ]
            )
        if codename in TOOL_ACCESS_CODENAMES and app_label == "registry":
            raise_invalid(
                [
                    {
                        "field": "permissions",
                        "message": f"'{label}' is a right on tools: give it with a grant instead.",
                        "code": "use_grant",
                    }
                ]
            )
        perm = Permission.objects.filter(
            content_type__app_label=app_label, codename=codename
        ).first()
        if perm is None:
            raise_invalid(
                [
                    {
                        "field": "permissions",
                        "message": f"Unknown permission '{label}'.",
                        "code": "invalid",
                    }
                ]
            )
        perms.append(perm)
    return perms


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


@transaction.atomic
def role_update(*, actor, role: Group, data: dict) -> Group:
    before = role_snapshot(role)
    had_admins = platform_admins_remain()
    if "name" in data and data["name"] != role.name:
        name = (data["name"] or "").strip()
        if not name:
            raise_invalid([{"field": "name", "message": "May not be blank.", "code": "invalid"}])
        if Group.objects.filter(name=name).exclude(pk=role.pk).exists():
            raise Conflict(f"A role named '{name}' already exists.", code="duplicate_name")
        role.name = name
        role.save(update_fields=["name"])
    if "description" in data:
        RoleProfile.objects.update_or_create(
            group=role, defaults={"description": data["description"]}
        )
    if "permissions" in data:
        keep = list(role.permissions.filter(codename__in=TOOL_ACCESS_CODENAMES))
        role.permissions.set([*keep, *_platform_permissions(data["permissions"])])
        _keep_a_platform_admin(had_admins)
    role = Group.objects.get(pk=role.pk)
    after = role_snapshot(role)
    if after != before:
        audit_record(actor=actor, action="role.updated", target=role, before=before, after=after)
    return role


@transaction.atomic
def role_delete(*, actor, role: Group) -> None:
    snapshot = role_snapshot(role)
    snapshot["members"] = list(role.user_set.values_list("username", flat=True))
    snapshot["grants"] = [str(g) for g in role.tool_grants.select_related("tool")]
    role_id, role_repr = str(role.pk), role.name
    had_admins = platform_admins_remain()
    role.delete()
    _keep_a_platform_admin(had_admins)
    audit_record(
        actor=actor,
        action="role.deleted",
        target_type="auth.group",
        target_id=role_id,
        target_repr=role_repr,
        before=snapshot,
    )


# Agents

# An agent acts as a user of its own, named after it with this prefix.
AGENT_USERNAME_PREFIX = "agent."


def agent_snapshot(agent: Agent) -> dict:
    return {
        "id": str(agent.pk),
        "name": agent.name,
        "owner": agent.owner.username,
        "description": agent.description,
        "is_active": agent.is_active,
        "webhook_url": agent.webhook_url,
        "has_webhook_secret": bool(agent.webhook_secret),
        "roles": sorted(agent.user.groups.values_list("name", flat=True)),
    }


WEBHOOK_SECRET_MIN_CHARS = 16
WEBHOOK_SECRET_MAX_CHARS = 512


def webhook_problems(url: str, *, secret: str | None, has_secret: bool) -> dict[str, str]:
    """What is wrong with an agent's webhook (field → message); ``secret``: a new one, if given.

    A webhook must be an http(s) URL and have a signing secret, so the
    receiver can tell ToolHub's POSTs from anyone else's.
    """
    problems: dict[str, str] = {}
    if secret and len(secret) < WEBHOOK_SECRET_MIN_CHARS:
        problems["webhook_secret"] = (
            f"Use at least {WEBHOOK_SECRET_MIN_CHARS} characters (a random string)."
        )
    elif secret and len(secret) > WEBHOOK_SECRET_MAX_CHARS:
        problems["webhook_secret"] = f"Use at most {WEBHOOK_SECRET_MAX_CHARS} characters."
    if url:
        try:
            parts = urlsplit(url)
            host, credentials = parts.hostname, parts.username or parts.password
        except ValueError:
            parts, host, credentials = None, None, None
        if parts is None or parts.scheme.lower() not in ("http", "https") or not host:
            problems["webhook_url"] = "Give an absolute http:// or https:// URL."
        elif credentials:
            # They would be stored, shown and audited in plain: the signature authenticates.
            problems["webhook_url"] = (
                "Do not put credentials in the URL; receivers check X-ToolHub-Signature."
            )
        elif not secret and not has_secret and "webhook_secret" not in problems:
            missing = (
                "A webhook needs a signing secret: receivers check X-ToolHub-Signature with it."
            )
            problems["webhook_secret"] = missing
    return problems


def _apply_webhook(agent: Agent, data: dict) -> bool:
    """Set ``webhook_url`` / ``webhook_secret`` from ``data``; True when the secret changed.

    An empty or null ``webhook_secret`` removes the stored secret; absent keeps it.
    Without either key nothing is checked: a webhook stored under older rules never
    blocks another change (deactivating the agent, above all).
    """
    if "webhook_url" not in data and "webhook_secret" not in data:
        return False
    if "webhook_url" in data:
        agent.webhook_url = data["webhook_url"] or ""
    secret = data.get("webhook_secret")
    if secret is not None and not isinstance(secret, str):
        raise_invalid(
            [{"field": "webhook_secret", "message": "Must be a string.", "code": "invalid"}]
        )
    clearing = "webhook_secret" in data and not secret
    problems = webhook_problems(
        agent.webhook_url, secret=secret, has_secret=bool(agent.webhook_secret) and not clearing
    )
    if problems:
        raise_invalid([{"field": f, "message": m, "code": "invalid"} for f, m in problems.items()])
    if clearing:
        changed = bool(agent.webhook_secret)
        agent.webhook_secret = ""
        return changed
    if secret:
        changed = not agent.webhook_secret or crypto.decrypt_json(agent.webhook_secret) != secret
        if changed:
            agent.webhook_secret = crypto.encrypt_json(secret)
        return changed
    return False


# auth_group.id is a 32-bit integer on PostgreSQL: no role has an id beyond it.
MAX_ROLE_ID = 2**31 - 1


def _roles(role_ids: Iterable) -> list[Group]:
    """The roles of ``role_ids`` (ints or ASCII digit strings); a 400 naming ``role_ids`` if any
    is not a role's id. Ids beyond the column's range are no role's and never reach the database.
    """
    ids = list(role_ids)
    wanted = {}
    for raw in ids:
        role_id = None if isinstance(raw, bool) else parse_id(raw)
        if role_id is not None and role_id <= MAX_ROLE_ID:
            wanted[str(raw)] = role_id
    found = {r.pk: r for r in Group.objects.filter(pk__in=set(wanted.values()))}
    roles, missing = [], []
    for index, raw in enumerate(ids):
        role = found.get(wanted.get(str(raw)))
        if role is None:
            missing.append((index, raw))
        elif role not in roles:
            roles.append(role)
    if missing:
        raise_invalid(
            [
                {
                    "field": "role_ids",
                    "message": f"No role with id {str(raw)[:40]} (role_ids[{index}]).",
                    "code": "invalid",
                }
                for index, raw in missing
            ]
        )
    return roles


def audit_membership(actor, target, *, added: Iterable, removed: Iterable) -> None:
    """Record roles ``target`` (an agent or a person) gained and lost; by role or name."""

    def as_role(role) -> Group:
        return role if isinstance(role, Group) else Group.objects.get(name=role)

    for action, roles, key in (
        ("role.member_added", added, "after"),
        ("role.member_removed", removed, "before"),
    ):
        for role in sorted((as_role(r) for r in roles), key=lambda r: r.name):
            member = {
                "role": role.name,
                "member": str(target),
                "member_type": target._meta.label_lower,
            }
            audit_record(actor=actor, action=action, target=role, **{key: member})


def _set_membership(actor, user, roles: list[Group], *, target) -> None:
    current = set(user.groups.all())
    wanted = set(roles)
    user.groups.add(*(wanted - current))
    user.groups.remove(*(current - wanted))
    audit_membership(actor, target, added=wanted - current, removed=current - wanted)
    for cached in ("_toolhub_roles", "_toolhub_all_tools"):
        if hasattr(user, cached):
            delattr(user, cached)


@transaction.atomic
def agent_create(
    *,
    actor,
    name: str,
    owner,
    description: str = "",
    role_ids: Iterable = (),
    is_active: bool = True,
    webhook_url: str = "",
    webhook_secret: str | None = None,
) -> Agent:
    """Create an agent and its user. ``webhook_secret`` is stored encrypted and never shown."""
    User = get_user_model()
    roles = _roles(role_ids)
    agent = Agent(name=name, owner=owner, description=description, is_active=is_active)
    _apply_webhook(agent, {"webhook_url": webhook_url, "webhook_secret": webhook_secret})
    full_clean(agent, exclude=["user", "owner"])
    username = f"{AGENT_USERNAME_PREFIX}{name}"[:150]
    if Agent.objects.filter(name=name).exists() or User.objects.filter(username=username).exists():
        raise Conflict(
            f"An agent named '{name}' already exists.",
            code="duplicate_name",
            details=[{"field": "name", "message": "Already in use.", "code": "unique"}],
        )
    user = User(username=username, is_staff=False, is_superuser=False, is_active=True)
    user.set_unusable_password()
    user.save()
    agent.user = user
    agent.save()
    audit_record(actor=actor, action="agent.created", target=agent, after=agent_snapshot(agent))
    _set_membership(actor, user, roles, target=agent)
    return agent


@transaction.atomic
def agent_update(*, actor, agent: Agent, data: dict) -> Agent:
    agent = Agent.objects.select_for_update().select_related("user", "owner").get(pk=agent.pk)
    before = agent_snapshot(agent)
    for field in ("description", "is_active", "owner"):
        if field in data:
            setattr(agent, field, data[field])
    secret_changed = _apply_webhook(agent, data)
    full_clean(agent, exclude=["user", "owner", "name"])
    agent.save()
    if "role_ids" in data:
        _set_membership(actor, agent.user, _roles(data["role_ids"]), target=agent)
    after = agent_snapshot(agent)
    if secret_changed or {k: v for k, v in after.items() if k != "roles"} != {
        k: v for k, v in before.items() if k != "roles"
    }:
        action = "agent.updated"
        if set(data) == {"is_active"}:
            action = "agent.activated" if agent.is_active else "agent.deactivated"
        if secret_changed:
            after["webhook_secret_changed"] = True  # the secret itself is never recorded
        audit_record(actor=actor, action=action, target=agent, before=before, after=after)
    return agent


def user_set_roles(*, actor, user, role_ids: Iterable) -> None:
    """Membership for a person (agents use ``agent_update``)."""
    with transaction.atomic():
        had_admins = platform_admins_remain()
        _set_membership(actor, user, _roles(role_ids), target=user)
        _keep_a_platform_admin(had_admins)


# Tokens


def token_snapshot(token: ApiToken) -> dict:
    return {
        "id": token.pk,
        "user": token.user.username,
        "name": token.name,
        "prefix": token.prefix,
        "expires_at": token.expires_at,
        "revoked_at": token.revoked_at,
    }


@transaction.atomic
def token_issue(
    *, actor, user, name: str = "", expires_at: datetime | None = None
) -> tuple[ApiToken, str]:
    """Create a token for ``user``. Returns the row and the raw token: show it once, never store it.

    With ``TOOLHUB_TOKEN_MAX_DAYS`` set, a token expires at most that many days
    ahead (without an expiry, or with a later one, it gets that one); tokens issued
    before the setting stop that many days after they were issued (authentication).
    """
    now = timezone.now()
    if expires_at is not None and expires_at <= now:
        raise_invalid(
            [{"field": "expires_at", "message": "Must be in the future.", "code": "invalid"}]
        )
    max_days = getattr(settings, "TOOLHUB_TOKEN_MAX_DAYS", None)
    if max_days:
        # Brought within the cap, never refused: the answer shows the expiry it got.
        latest = now + timedelta(days=max_days)
        expires_at = latest if expires_at is None else min(expires_at, latest)
    if len(name) > 100:
        raise_invalid([{"field": "name", "message": "At most 100 characters.", "code": "invalid"}])
    raw = generate_token()
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=raw[:10],
        token_hash=hash_token(raw),
        expires_at=expires_at,
        created_by=actor if getattr(actor, "pk", None) else None,
    )
    audit_record(actor=actor, action="token.issued", target=token, after=token_snapshot(token))
    return token, raw


@transaction.atomic
@transaction.atomic
def token_revoke(*, actor, token: ApiToken) -> ApiToken:
    """Revoke ``token`` (once); refused when it is the last way the last platform admin
    who cannot log in to the admin could act."""
    had_admins = platform_admins_remain()
    claimed = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    _keep_a_platform_admin(had_admins)
    token.refresh_from_db()
    if claimed:
        audit_record(actor=actor, action="token.revoked", target=token, after=token_snapshot(token))
    return token


# Grants


def grant_snapshot(grant: ToolGrant) -> dict:
    return {
        "id": str(grant.pk),
        "tool_id": str(grant.tool_id) if grant.tool_id else None,
        "tool": grant.tool.name if grant.tool_id else "*",
        "role_id": grant.role_id,
        "role": grant.role.name,
        "action": grant.action,
    }


def _permission(action: str) -> Permission:
    return Permission.objects.get(
        content_type=ContentType.objects.get_for_model(Tool), codename=CODENAMES[Action(action)]
    )


@transaction.atomic
def grant_create(
    *, actor, role: Group, action: str, tool: Tool | None = None
) -> tuple[ToolGrant, bool]:
    """Give ``role`` the right ``action`` on ``tool`` (or on all tools). Idempotent."""
    if action not in Action.values:
        raise InvalidInput(
            f"Unknown action '{action}'; use one of: {', '.join(Action.values)}.",
            details=[{"field": "action", "message": "Unknown action.", "code": "invalid_choice"}],
        )
    existing = ToolGrant.objects.filter(role=role, action=action, tool=tool).first()
    if existing:
        return existing, False
    try:
        with transaction.atomic():
            grant = ToolGrant.objects.create(
                role=role,
                action=action,
                tool=tool,
                granted_by=actor if getattr(actor, "pk", None) else None,
            )
    except IntegrityError:
        return ToolGrant.objects.get(role=role, action=action, tool=tool), False
    perm = _permission(action)
    if tool is None:
        role.permissions.add(perm)
    else:
        ToolGroupObjectPermission.objects.get_or_create(
            group=role, permission=perm, content_object=tool
        )
    audit_record(actor=actor, action="grant.created", target=grant, after=grant_snapshot(grant))
    return grant, True


@transaction.atomic
def grant_revoke(*, actor, grant: ToolGrant) -> None:
    snapshot = grant_snapshot(grant)
    perm = _permission(grant.action)
    if grant.tool_id is None:
        grant.role.permissions.remove(perm)
    else:
        ToolGroupObjectPermission.objects.filter(
            group=grant.role, permission=perm, content_object_id=grant.tool_id
        ).delete()
    grant_id, grant_repr = str(grant.pk), str(grant)
    grant.delete()
    audit_record(
        actor=actor,
        action="grant.revoked",
        target_type=ToolGrant._meta.label_lower,
        target_id=grant_id,
        target_repr=grant_repr,
        before=snapshot,
    )


__all__ = [
    "PLATFORM_ADMIN_PERMISSIONS",
    "REVIEWER_PERMISSIONS",
    "agent_create",
    "agent_update",
    "audit_membership",
    "grant_create",
    "grant_revoke",
    "leaves_no_platform_admin",
    "platform_admins_remain",
    "role_create",
    "role_delete",
    "role_update",
    "token_issue",
    "token_revoke",
    "user_set_roles",
]
