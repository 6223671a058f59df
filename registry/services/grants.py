"""Per-tool grants: giving a role one action on one tool, and taking it back."""

from __future__ import annotations

from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import IntegrityError, transaction

from registry.authorization import CODENAMES
from registry.models import (
    Action,
    Tool,
    ToolGrant,
    ToolGroupObjectPermission,
)
from registry.policy import policy_check
from registry.services.audit import audit_record
from toolhub.exceptions import InvalidInput

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
    policy_check(actor=actor, action="grant.write")
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
    policy_check(actor=actor, action="grant.write")
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
