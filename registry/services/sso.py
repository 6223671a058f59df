"""Single sign-on's writes: the group mappings, and what each sign-in changes.

A mapping says what members of one identity-provider group get: a role, admin access
(staff), or both. They come from two places, both applied: ``TOOLHUB_SSO_GROUP_ROLES``
(settings, by role name) and ``SsoGroupMapping`` rows (the admin, written here under
the policy row ``sso_mapping.write``: a mapping hands its role to everyone in a group).

At every sign-in (``sso_login_sync``) the person's roles are brought in line with the
groups the identity provider lists for them now: a role some mapping names is held
exactly while one of the person's groups maps to it, so a role whose group the person
left is taken away; a role no mapping names is left as it is (given by hand). Admin
access likewise, once any mapping gives it (superusers' is left alone). The sign-in,
the person it created and each change are audit events, written with the changes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from registry.models import SsoGroupMapping
from registry.policy import policy_check
from registry.services.audit import audit_record
from registry.services.validation import full_clean, raise_invalid
from toolhub.exceptions import Conflict

logger = logging.getLogger(__name__)

# What an audit event keeps of the groups a sign-in listed.
MAX_AUDITED_GROUPS = 200
MAX_GROUP_CHARS = 255
VIA = "sso"


# Mappings


def mapping_snapshot(mapping: SsoGroupMapping) -> dict:
    return {
        "id": mapping.pk,
        "idp_group": mapping.idp_group,
        "role": mapping.role.name if mapping.role_id else None,
        "makes_staff": mapping.makes_staff,
    }


def _check_mapping(mapping: SsoGroupMapping) -> None:
    mapping.idp_group = (mapping.idp_group or "").strip()
    full_clean(mapping)
    if mapping.role_id is None and not mapping.makes_staff:
        raise_invalid(
            [
                {
                    "field": "role",
                    "message": "Give a role, admin access, or both: this mapping gives nothing.",
                    "code": "invalid",
                }
            ]
        )
    same = SsoGroupMapping.objects.filter(
        idp_group=mapping.idp_group, role_id=mapping.role_id
    ).exclude(pk=mapping.pk)
    if same.exists():
        raise Conflict(
            f"Group '{mapping.idp_group}' is already mapped to that.",
            code="duplicate_mapping",
            details=[{"field": "idp_group", "message": "Already mapped.", "code": "unique"}],
        )


@transaction.atomic
def sso_mapping_create(
    *, actor, idp_group: str, role: Group | None = None, makes_staff: bool = False
) -> SsoGroupMapping:
    policy_check(actor=actor, action="sso_mapping.write")
    mapping = SsoGroupMapping(idp_group=idp_group, role=role, makes_staff=makes_staff)
    _check_mapping(mapping)
    mapping.save()
    audit_record(
        actor=actor,
        action="sso_mapping.created",
        target=mapping,
        after=mapping_snapshot(mapping),
    )
    return mapping


MAPPING_FIELDS = ("idp_group", "role", "makes_staff")


@transaction.atomic
def sso_mapping_update(*, actor, mapping: SsoGroupMapping, data: dict) -> SsoGroupMapping:
    policy_check(actor=actor, action="sso_mapping.write")
    unknown = set(data) - set(MAPPING_FIELDS)
    if unknown:
        raise TypeError(f"unknown mapping fields: {sorted(unknown)}")
    mapping = SsoGroupMapping.objects.select_for_update().get(pk=mapping.pk)
    before = mapping_snapshot(mapping)
    for name, value in data.items():
        setattr(mapping, name, value)
    _check_mapping(mapping)
    mapping.save()
    after = mapping_snapshot(mapping)
    if after != before:
        audit_record(
            actor=actor, action="sso_mapping.updated", target=mapping, before=before, after=after
        )
    return mapping


@transaction.atomic
def sso_mapping_delete(*, actor, mapping: SsoGroupMapping) -> None:
    policy_check(actor=actor, action="sso_mapping.write")
    snapshot = mapping_snapshot(mapping)
    mapping_id, mapping_repr = str(mapping.pk), str(mapping)
    mapping.delete()
    audit_record(
        actor=actor,
        action="sso_mapping.deleted",
        target_type=SsoGroupMapping._meta.label_lower,
        target_id=mapping_id,
        target_repr=mapping_repr,
        before=snapshot,
    )


# What a person's groups give them


@dataclass
class Entitlements:
    """What the mappings say about one person: the roles they govern, those the
    person's groups give, and the same for admin access."""

    governed: set[int] = field(default_factory=set)  # role ids some mapping names
    given: set[int] = field(default_factory=set)
    staff_governed: bool = False
    staff_given: bool = False


def entitlements(groups: Iterable[str]) -> Entitlements:
    """What the mappings (settings and admin) give a member of ``groups``."""
    groups = set(groups)
    result = Entitlements()
    configured = settings.TOOLHUB_SSO_GROUP_ROLES
    names = {name for entry in configured.values() for name in entry["roles"]}
    ids = dict(Group.objects.filter(name__in=names).values_list("name", "id"))
    missing = sorted(names - set(ids))
    if missing:
        logger.warning(
            "TOOLHUB_SSO_GROUP_ROLES names roles that do not exist (ignored): %s",
            ", ".join(missing),
        )
    for group, entry in configured.items():
        role_ids = [ids[name] for name in entry["roles"] if name in ids]
        _apply(result, group in groups, role_ids, entry["staff"])
    rows = SsoGroupMapping.objects.values_list("idp_group", "role_id", "makes_staff")
    for group, role_id, staff in rows:
        _apply(result, group in groups, [role_id] if role_id else [], staff)
    return result


def _apply(result: Entitlements, member: bool, role_ids: list[int], staff: bool) -> None:
    for role_id in role_ids:
        result.governed.add(role_id)
        if member:
            result.given.add(role_id)
    if staff:
        result.staff_governed = True
        result.staff_given = result.staff_given or member


# Sign-ins


def _person(user) -> dict:
    """What the trail keeps of a person a sign-in created or changed (as the admin's)."""
    return {
        "username": user.get_username(),
        "email": user.email,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "is_active": user.is_active,
        "is_staff": user.is_staff,
        "is_superuser": user.is_superuser,
        "roles": sorted(user.groups.values_list("name", flat=True)),
    }


def _identity(issuer: str, subject: str) -> dict:
    return {"via": VIA, "issuer": issuer, "subject": subject}


def _audited_groups(groups: Iterable[str]) -> list[str]:
    return sorted(g[:MAX_GROUP_CHARS] for g in groups)[:MAX_AUDITED_GROUPS]


def sso_person_created(*, user, issuer: str, subject: str) -> None:
    """Record the person a first sign-in created (call inside the creating transaction)."""
    audit_record(
        actor=None,
        action="user.created",
        target=user,
        after={**_person(user), **_identity(issuer, subject)},
    )


PROFILE_FIELDS = ("email", "first_name", "last_name")


@dataclass(frozen=True)
class SignIn:
    """What one sign-in changed."""

    roles_added: list[str]
    roles_removed: list[str]
    is_staff: bool


@transaction.atomic
def sso_login_sync(
    *,
    user,
    issuer: str,
    subject: str,
    groups: Iterable[str],
    profile: dict | None = None,
    created: bool = False,
) -> SignIn:
    """Bring ``user``'s mapped roles and admin access in line with ``groups`` (the groups
    the identity provider lists for them now), refresh their name and e-mail from
    ``profile``, and record the sign-in. Runs as the system: the mappings decide."""
    groups = {g for g in groups if isinstance(g, str)}
    person = get_user_model().objects.select_for_update().get(pk=user.pk)
    before = _person(person)
    plan = entitlements(groups)
    current = set(person.groups.values_list("id", flat=True))
    added = plan.given - current
    removed = (current & plan.governed) - plan.given
    changed = _refresh_profile(person, profile or {})
    if plan.staff_governed and not person.is_superuser and person.is_staff != plan.staff_given:
        person.is_staff = plan.staff_given
        changed.append("is_staff")
    if changed:
        person.save(update_fields=changed)
    person.groups.add(*added)
    person.groups.remove(*removed)
    roles = {r.pk: r for r in Group.objects.filter(pk__in=added | removed)}
    _audit_memberships(person, added=added, removed=removed, roles=roles, issuer=issuer)
    if changed:
        after = _person(person)
        audit_record(
            actor=None,
            action="user.updated",
            target=person,
            before=before,
            after={**after, "changed": sorted(changed), **_identity(issuer, subject)},
        )
    outcome = SignIn(
        roles_added=sorted(roles[i].name for i in added),
        roles_removed=sorted(roles[i].name for i in removed),
        is_staff=person.is_staff,
    )
    audit_record(
        actor=person,
        action="sso.login",
        target=person,
        after={
            **_identity(issuer, subject),
            "groups": _audited_groups(groups),
            "created": created,
            "roles_added": outcome.roles_added,
            "roles_removed": outcome.roles_removed,
            "is_staff": outcome.is_staff,
        },
    )
    # The caller signs ``user`` in: it carries what changed, and no rights read before.
    for name in changed:
        setattr(user, name, getattr(person, name))
    for cached in ("_toolhub_roles", "_toolhub_all_tools", "_perm_cache", "_group_perm_cache"):
        if hasattr(user, cached):
            delattr(user, cached)
    return outcome


def _refresh_profile(person, profile: dict) -> list[str]:
    changed = []
    for name in PROFILE_FIELDS:
        value = profile.get(name)
        if not isinstance(value, str):
            continue
        value = value.strip()[: person._meta.get_field(name).max_length]
        if value and value != getattr(person, name):
            setattr(person, name, value)
            changed.append(name)
    return changed


def _audit_memberships(person, *, added, removed, roles: dict, issuer: str) -> None:
    """As the admin and the API record them (``role.member_added`` / ``_removed``), saying
    the sign-in made the change."""
    for action, ids, key in (
        ("role.member_added", added, "after"),
        ("role.member_removed", removed, "before"),
    ):
        for role in sorted((roles[i] for i in ids), key=lambda r: r.name):
            member = {
                "role": role.name,
                "member": str(person),
                "member_type": person._meta.label_lower,
                "via": VIA,
                "issuer": issuer,
            }
            audit_record(actor=None, action=action, target=role, **{key: member})


def sso_login_refused(*, user, issuer: str, subject: str, reason: str) -> None:
    """Record a sign-in the identity provider vouched for that ToolHub refused (an
    inactive person): who, and why."""
    with transaction.atomic():
        audit_record(
            actor=None,
            action="sso.login_refused",
            target=user,
            after={**_identity(issuer, subject), "reason": reason},
        )
