"""Which roles a user or agent holds, changed and audited as one membership event."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import Group

from registry.policy import policy_check
from registry.services.audit import audit_record
from registry.services.validation import raise_invalid
from toolhub.api.params import parse_id

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
    """Give ``user`` exactly ``roles``. A change takes a platform admin: a role can carry
    any right, and an agent or its owner must never raise the agent's own."""
    current = set(user.groups.all())
    wanted = set(roles)
    if wanted != current:
        policy_check(actor=actor, action="membership.write")
    user.groups.add(*(wanted - current))
    user.groups.remove(*(current - wanted))
    audit_membership(actor, target, added=wanted - current, removed=current - wanted)
    for cached in ("_toolhub_roles", "_toolhub_all_tools"):
        if hasattr(user, cached):
            delattr(user, cached)
