"""Writes to roles: the permissions a role may hold, and its create, update and delete."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import Group, Permission
from django.db import transaction
from django.db.models import Q

from registry.authorization import CODENAMES
from registry.models import RoleProfile
from registry.policy import policy_check
from registry.services.audit import audit_record
from registry.services.platform_admins import _keep_a_platform_admin, platform_admins_remain
from registry.services.validation import raise_invalid
from toolhub.exceptions import Conflict

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
    # Verification runs are written by "Verify now" (reviewers, platform admins) only.
    *(
        f"registry.{verb}_{model}"
        for model in ("verificationrun", "verificationfinding")
        for verb in ("add", "change", "delete", "view")
    ),
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
    policy_check(actor=actor, action="role.write")
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


@transaction.atomic
def role_update(*, actor, role: Group, data: dict) -> Group:
    policy_check(actor=actor, action="role.write")
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
    policy_check(actor=actor, action="role.write")
    snapshot = role_snapshot(role)
    snapshot["members"] = list(role.user_set.values_list("username", flat=True))
    snapshot["grants"] = [str(g) for g in role.tool_grants.select_related("tool")]
    # Single sign-on mappings to the role go with it (database cascade): say which.
    mappings = sorted(str(m) for m in role.sso_group_mappings.select_related("role"))
    if mappings:
        snapshot["sso_group_mappings"] = mappings
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
