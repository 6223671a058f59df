"""The one place that decides access to tools.

Every API queryset of tools goes through ``restrict`` and every action on one
tool through ``can``. Rights come from guardian's tables: an object
permission on one tool (``ToolGroupObjectPermission`` / ``ToolUserObjectPermission``,
direct foreign keys) or a model permission for all tools. ``manage`` implies
``execute`` implies ``read``.

A principal is a Django user: an agent's service user or a person. It acts
with the roles (groups) it belongs to; ``role_ids`` narrows that to a subset
(it can never widen it: ids the user is not a member of are ignored).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db.models import Q, QuerySet

from registry import snapshot
from registry.models import Action, Tool, ToolGroupObjectPermission, ToolUserObjectPermission

CODENAMES = {
    Action.READ: "view_tool",
    Action.EXECUTE: "execute_tool",
    Action.MANAGE: "manage_tool",
    Action.APPROVE: "approve_tool",
}
# The codenames that satisfy each action (the hierarchy; approve stands apart).
IMPLIED = {
    Action.READ: ("view_tool", "execute_tool", "manage_tool", "approve_tool"),
    Action.EXECUTE: ("execute_tool", "manage_tool"),
    Action.MANAGE: ("manage_tool",),
    Action.APPROVE: ("approve_tool",),
}
RANK = {"view_tool": Action.READ, "execute_tool": Action.EXECUTE, "manage_tool": Action.MANAGE}
_ORDER = [Action.READ, Action.EXECUTE, Action.MANAGE]


def _active(user) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active)


def role_ids_of(user, role_ids: Iterable[int] | None = None) -> list[int]:
    """The user's role ids, narrowed to ``role_ids`` when given (never widened)."""
    if not _active(user):
        return []
    mine = list(_roles_of(user))
    if role_ids is None:
        return mine
    wanted = set(role_ids)
    return [r for r in mine if r in wanted]


def _roles_of(user) -> dict[int, str]:
    """``{role id: name}`` of the user's roles, read once per request (cached on the user)."""
    cached = getattr(user, "_toolhub_roles", None)
    if cached is None:
        cached = dict(user.groups.values_list("id", "name"))
        user._toolhub_roles = cached
    return cached


def role_names_of(user) -> list[str]:
    return sorted(_roles_of(user).values()) if _active(user) else []


def roles_granting(user, action: str, tool: Tool, role_ids: Iterable[int] | None = None):
    """Names of the user's roles (narrowed to ``role_ids``) that hold ``action`` on
    ``tool``, through a grant on it or an all-tools grant."""
    roles = _roles_of(user) if _active(user) else {}
    ids = role_ids_of(user, role_ids)
    if not ids:
        return []
    codes = list(IMPLIED[Action(action)])
    via_all = Group.permissions.through.objects.filter(
        group_id__in=ids, permission__content_type=_tool_ct(), permission__codename__in=codes
    ).values_list("group_id", flat=True)
    via_tool = ToolGroupObjectPermission.objects.filter(
        group_id__in=ids, content_object_id=tool.pk, permission__codename__in=codes
    ).values_list("group_id", flat=True)
    return sorted({roles[i] for i in [*via_all, *via_tool] if i in roles})


def _tool_ct() -> ContentType:
    return ContentType.objects.get_for_model(Tool)


def _has_all_tools(user, codes: Iterable[str], groups: list[int], narrowed: bool) -> bool:
    """A model-level grant (all tools), through a role or held by the user directly."""
    key = (tuple(sorted(groups)), narrowed)
    cache = getattr(user, "_toolhub_all_tools", None)
    if cache is None:
        cache = user._toolhub_all_tools = {}
    held = cache.get(key)
    if held is None:
        holder = Q(group__id__in=groups)
        if not narrowed:
            holder |= Q(user=user)
        held = cache[key] = set(
            Permission.objects.filter(
                holder, content_type=_tool_ct(), codename__in=list(CODENAMES.values())
            ).values_list("codename", flat=True)
        )
    return bool(held & set(codes))


def _object_grants(user, codes: Iterable[str], groups: list[int], narrowed: bool) -> Q:
    by_group = ToolGroupObjectPermission.objects.filter(
        group_id__in=groups, permission__codename__in=list(codes)
    ).values("content_object_id")
    condition = Q(pk__in=by_group)
    if not narrowed:
        by_user = ToolUserObjectPermission.objects.filter(
            user=user, permission__codename__in=list(codes)
        ).values("content_object_id")
        condition |= Q(pk__in=by_user)
    return condition


def restrict(
    queryset: QuerySet[Tool],
    user,
    action: str = Action.READ,
    *,
    role_ids: Iterable[int] | None = None,
) -> QuerySet[Tool]:
    """``queryset`` limited to the tools ``user`` may perform ``action`` on."""
    if not _active(user):
        return queryset.none()
    if user.is_superuser and role_ids is None:
        return queryset
    codes = IMPLIED[Action(action)]
    narrowed = role_ids is not None
    groups = role_ids_of(user, role_ids)
    if _has_all_tools(user, codes, groups, narrowed):
        return queryset
    return queryset.filter(_object_grants(user, codes, groups, narrowed))


def tools_executable_by(user) -> QuerySet[Tool]:
    """The active tools ``user`` may execute: what ``registry/me`` and the MCP endpoint list."""
    return restrict(Tool.objects.all(), user, Action.EXECUTE).filter(is_active=True)


def can(
    user,
    action: str,
    tool: Tool,
    *,
    role_ids: Iterable[int] | None = None,
    entries: Any = snapshot.UNREAD,
) -> bool:
    """May ``user`` perform ``action`` on ``tool``?

    The answer comes from the permission codenames the user holds on the tool
    (:func:`tool_codes`), kept per registry generation (``registry/snapshot.py``);
    ``entries`` passes the snapshot a caller already read.
    """
    if not _active(user):
        return False
    if user.is_superuser and role_ids is None:
        return True
    held = tool_codes(user, tool.pk, role_ids=role_ids, entries=entries)
    return bool(held & set(IMPLIED[Action(action)]))


def tool_codes(
    user, tool_id, *, role_ids: Iterable[int] | None = None, entries: Any = snapshot.UNREAD
) -> frozenset[str]:
    """Every tool permission codename ``user`` holds on one tool, through its roles
    (narrowed to ``role_ids`` when given) or directly, object-level or for all tools."""
    narrowed = role_ids is not None
    groups = role_ids_of(user, role_ids)
    key = ("codes", user.pk, tuple(sorted(groups)), narrowed, tool_id)
    return snapshot.cached(
        snapshot.resolve(entries), key, lambda: _load_codes(user, tool_id, groups, narrowed)
    )


def _load_codes(user, tool_id, groups: list[int], narrowed: bool) -> frozenset[str]:
    holder = Q(group__id__in=groups)
    if not narrowed:
        holder |= Q(user=user)
    model_level = Permission.objects.filter(
        holder, content_type=_tool_ct(), codename__in=list(CODENAMES.values())
    ).values_list("codename", flat=True)
    object_level = ToolGroupObjectPermission.objects.filter(
        group_id__in=groups, content_object_id=tool_id
    ).values_list("permission__codename", flat=True)
    codes = set(model_level) | set(object_level)
    if not narrowed:
        codes |= set(
            ToolUserObjectPermission.objects.filter(
                user=user, content_object_id=tool_id
            ).values_list("permission__codename", flat=True)
        )
    return frozenset(codes)


def granted_action(role: Group, tool: Tool) -> str | None:
    """The highest action ``role`` holds on ``tool`` (directly or through an all-tools grant)."""
    codes = set(
        ToolGroupObjectPermission.objects.filter(group=role, content_object=tool).values_list(
            "permission__codename", flat=True
        )
    )
    codes |= set(
        role.permissions.filter(content_type=_tool_ct(), codename__in=RANK).values_list(
            "codename", flat=True
        )
    )
    actions = [RANK[c] for c in codes if c in RANK]
    if not actions:
        return None
    return max(actions, key=_ORDER.index).value


def role_can(role: Group, action: str, tool: Tool) -> bool:
    """Does ``role`` hold ``action`` on ``tool`` (directly or through an all-tools grant)?"""
    return tools_for_role(role, action).filter(pk=tool.pk).exists()


def tools_for_role(role: Group, action: str = Action.READ) -> QuerySet[Tool]:
    codes = IMPLIED[Action(action)]
    if role.permissions.filter(content_type=_tool_ct(), codename__in=codes).exists():
        return Tool.objects.all()
    ids = ToolGroupObjectPermission.objects.filter(
        group=role, permission__codename__in=codes
    ).values("content_object_id")
    return Tool.objects.filter(pk__in=ids)


# Platform-level rights (model permissions, not per tool).


def is_platform_admin(user) -> bool:
    """Creates tools, grants access, manages agents and roles."""
    return _active(user) and (user.is_superuser or user.has_perm("registry.grant_tool"))


def is_reviewer(user) -> bool:
    """Sees everything, changes nothing."""
    return _active(user) and (user.is_superuser or user.has_perm("registry.review_all"))


def may_ask_about_role(user, role: Group) -> bool:
    """Only platform admins and reviewers may look at roles other than their own."""
    if is_platform_admin(user) or is_reviewer(user):
        return True
    return role.pk in role_ids_of(user)
