"""The standard roles every install needs: ``platform-admin`` and ``reviewer``.

``ensure_standard_roles`` creates them when missing and brings existing ones up to
their platform permissions and all-tools grant. It only adds: permissions an admin
gave a role on top are kept. Every change is audited; a run that finds nothing to
do writes nothing (no audit event either).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth.models import Group, Permission
from django.db import IntegrityError, transaction

from registry.authorization import CODENAMES
from registry.models import Action
from registry.policy import policy_check
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services.audit import audit_record
from toolhub.exceptions import Conflict, ToolHubError


@dataclass(frozen=True)
class StandardRole:
    name: str
    description: str
    permissions: tuple[str, ...]  # app_label.codename
    all_tools_action: str  # the all-tools grant


STANDARD_ROLES = (
    StandardRole(
        name="platform-admin",
        description="Registers tools, manages grants, limits and tokens.",
        permissions=tuple(role_services.PLATFORM_ADMIN_PERMISSIONS),
        all_tools_action=Action.MANAGE.value,
    ),
    StandardRole(
        name="reviewer",
        description="Compliance: sees every tool, execution and audit event; changes nothing.",
        permissions=tuple(role_services.REVIEWER_PERMISSIONS),
        all_tools_action=Action.READ.value,
    ),
)


class StandardRolesError(ToolHubError):
    code = "standard_roles"


@dataclass
class RoleOutcome:
    name: str
    all_tools_action: str
    permission_count: int = 0
    created: bool = False
    permissions_added: list[str] = field(default_factory=list)
    grant_created: bool = False

    @property
    def changed(self) -> bool:
        return self.created or bool(self.permissions_added) or self.grant_created


def _label(perm: Permission) -> str:
    return f"{perm.content_type.app_label}.{perm.codename}"


def _resolve(labels) -> dict[str, Permission]:
    """``{label: Permission}`` for every label; a clear error naming those that do not exist."""
    found, missing = {}, []
    for label in labels:
        app_label, _, codename = label.partition(".")
        perm = (
            Permission.objects.filter(content_type__app_label=app_label, codename=codename)
            .select_related("content_type")
            .first()
        )
        if perm is None:
            missing.append(label)
        else:
            found[label] = perm
    if missing:
        raise StandardRolesError(
            "Unknown permission(s): "
            + ", ".join(missing)
            + ". Run `manage.py migrate` first (permissions are created by migrate)."
        )
    return found


def _wanted_labels(spec: StandardRole) -> list[str]:
    """The role's permissions plus the model permission its all-tools grant stands for."""
    grant_label = f"registry.{CODENAMES[Action(spec.all_tools_action)]}"
    return list(dict.fromkeys([*spec.permissions, grant_label]))


def _get_or_create(actor, spec: StandardRole, perms: dict[str, Permission]) -> tuple[Group, bool]:
    role = Group.objects.filter(name=spec.name).first()
    if role is not None:
        return role, False
    # role_create takes platform permissions only: rights on tools (view_tool, ...)
    # are added below, with the grant.
    platform = [
        label
        for label in spec.permissions
        if not (
            label.startswith("registry.")
            and perms[label].codename in role_services.TOOL_ACCESS_CODENAMES
        )
    ]
    try:
        with transaction.atomic():
            role = role_services.role_create(
                actor=actor, name=spec.name, description=spec.description, permissions=platform
            )
    except (Conflict, IntegrityError):
        # Created meanwhile by another run: bring that one up to date instead.
        return Group.objects.get(name=spec.name), False
    return role, True


def _ensure(actor, spec: StandardRole) -> RoleOutcome:
    perms = _resolve(_wanted_labels(spec))
    role, created = _get_or_create(actor, spec, perms)
    outcome = RoleOutcome(
        name=spec.name,
        all_tools_action=spec.all_tools_action,
        permission_count=len(perms),
        created=created,
    )
    _, outcome.grant_created = grant_services.grant_create(
        actor=actor, role=role, action=spec.all_tools_action, tool=None
    )
    held = set(role.permissions.values_list("pk", flat=True))
    missing = [perm for perm in perms.values() if perm.pk not in held]
    if missing:
        before = role_services.role_snapshot(role)
        role.permissions.add(*missing)
        audit_record(
            actor=actor,
            action="role.updated",
            target=role,
            before=before,
            after=role_services.role_snapshot(role),
        )
        outcome.permissions_added = sorted(_label(p) for p in missing)
    return outcome


@transaction.atomic
def ensure_standard_roles(*, actor=None, missing_only: bool = False) -> list[RoleOutcome]:
    """Create or complete the standard roles; all or nothing. Returns what was done per role.

    ``missing_only``: create the roles that do not exist and leave existing ones as
    they are (what a deployment runs at every start: rights an admin took away on
    purpose stay away, and a role of the same name made by hand is not widened).
    """
    policy_check(actor=actor, action="role.write")
    specs = STANDARD_ROLES
    if missing_only:
        existing = set(
            Group.objects.filter(name__in=[r.name for r in specs]).values_list("name", flat=True)
        )
        skipped = [
            RoleOutcome(name=r.name, all_tools_action=r.all_tools_action, permission_count=0)
            for r in specs
            if r.name in existing
        ]
        return [*skipped, *(_ensure(actor, r) for r in specs if r.name not in existing)]
    return [_ensure(actor, spec) for spec in specs]


def describe(outcome: RoleOutcome) -> str:
    """One line for a command's output."""
    if not outcome.changed:
        return f"{outcome.name}: unchanged"
    if outcome.created:
        return (
            f"{outcome.name}: created with {outcome.permission_count} permissions and "
            f"the all-tools {outcome.all_tools_action} grant"
        )
    parts = []
    if outcome.grant_created:
        parts.append(f"added the all-tools {outcome.all_tools_action} grant")
    if outcome.permissions_added:
        parts.append(
            f"added {len(outcome.permissions_added)} permission(s): "
            + ", ".join(outcome.permissions_added)
        )
    return f"{outcome.name}: " + "; ".join(parts)


__all__ = [
    "STANDARD_ROLES",
    "RoleOutcome",
    "StandardRolesError",
    "describe",
    "ensure_standard_roles",
]
