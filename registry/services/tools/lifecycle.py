"""A tool's create, update, activation and delete, and what still refers to it."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import ProtectedError, RestrictedError
from django.utils import timezone

from registry import policy
from registry.models import Tool, ToolConfig, ToolParameter
from registry.services.audit import audit_record
from registry.services.tools.config_checks import _check_cacheable, check_tool_configs
from registry.services.tools.configs import _store_remote_tool_name, config_set
from registry.services.tools.definition import (
    _approved_definition_follows,
    _definition_moved,
    _mcp_link_moved,
)
from registry.services.tools.field_checks import (
    _check_approval_condition,
    _check_metadata,
    _check_tool_finite,
    _unique_name_or_conflict,
)
from registry.services.tools.mcp_managed import check_tool_change
from registry.services.tools.parameters import parameter_create
from registry.services.tools.saving import _save
from registry.services.tools.snapshots import (
    TOOL_FIELDS,
    config_snapshot,
    parameter_snapshot,
    tool_snapshot,
)
from registry.services.validation import full_clean
from toolhub.exceptions import Conflict

# Tools


def _check_create_identity(actor, name: str, metadata: Any) -> None:
    """A new tool may not pass for an imported or synced one: a reserved name
    (``<namespace>__<tool>``) or the metadata importers and syncs find theirs by."""
    if policy.reserved_name(None, str(name)):
        policy.policy_check(actor=actor, action="tool.reserved_name", fields=["name"])
    marks = (
        sorted(set(metadata or {}) & set(policy.WHAT_RUNS_METADATA))
        if isinstance(metadata, dict)
        else []
    )
    if marks:
        policy.policy_check(
            actor=actor, action="tool.what_runs", fields=[f"tool_metadata.{k}" for k in marks]
        )


@transaction.atomic
def tool_create(
    *,
    actor,
    name: str,
    type: str,
    description: str = "",
    parameters: list[dict] | None = None,
    configs: list[dict] | None = None,
    **fields: Any,
) -> Tool:
    unknown = set(fields) - set(TOOL_FIELDS)
    if unknown:
        raise TypeError(f"unknown tool fields: {sorted(unknown)}")
    policy.policy_check(actor=actor, action="tool.create")
    if type in policy.ADMIN_ONLY_TYPES or type == "python":
        # What a Python tool runs is a registered function, perhaps another tool's,
        # whose approval and limits live on that tool: naming it is a platform admin's.
        policy.policy_check(actor=actor, action="tool.what_runs", fields=["type"])
    _check_create_identity(actor, name, fields.get("tool_metadata"))
    metadata = fields.get("tool_metadata")
    if type == "command" and (metadata is None or isinstance(metadata, dict)):
        # A command runs a program: it fails closed unless its creator says otherwise.
        fields["tool_metadata"] = {"risk": "high", **(metadata or {})}
    tool = Tool(name=name, type=type, description=description, **fields)
    tool.definition_changed_at = timezone.now()
    if getattr(actor, "pk", None):
        tool.created_by = actor
    _check_tool_finite(tool)
    _check_metadata(tool.tool_metadata)
    full_clean(tool, exclude=["created_by"])
    _check_approval_condition(tool)
    _unique_name_or_conflict(name)
    _save(tool, f"A tool named '{name}' already exists.", "name")
    audit_record(actor=actor, action="tool.created", target=tool, after=tool_snapshot(tool))
    for index, spec in enumerate(parameters or []):
        # Without positions, the order given is the order of the input schema.
        spec = {"position": index, **spec}
        parameter_create(
            actor=actor, tool=tool, _prefix=f"parameters[{index}]", _creating=True, **spec
        )
    first_index: dict[str, int] = {}
    for index, spec in enumerate(configs or []):
        key = spec.get("config_key")
        if isinstance(key, str) and key in first_index:
            # config_set replaces an existing key; twice in one new tool is a mistake.
            raise Conflict(
                f"Config key '{key}' is given twice (configs[{first_index[key]}] and "
                f"configs[{index}]).",
                code="duplicate",
                details=[
                    {
                        "field": f"configs[{index}].config_key",
                        "message": "Already in use.",
                        "code": "unique",
                    }
                ],
            )
        first_index.setdefault(key, index)
        config_set(actor=actor, tool=tool, _prefix=f"configs[{index}]", _creating=True, **spec)
    _store_remote_tool_name(actor, tool)
    _store_python_function(actor, tool)
    _check_cacheable(tool)
    _approved_definition_follows(tool.pk, tool)
    return tool


def _store_python_function(actor, tool: Tool) -> None:
    """A Python tool always stores the function it runs (config ``function``, which only
    platform admins change): created without one, it runs the function its name says,
    and renaming it later changes nothing."""
    if tool.type == "python" and not tool.configs.filter(config_key="function").exists():
        config_set(
            actor=actor, tool=tool, config_key="function", config_value=tool.name, _creating=True
        )


@transaction.atomic
def tool_update(*, actor, tool: Tool, data: dict[str, Any], _check_configs: bool = True) -> Tool:
    """Update ``tool``'s own fields.

    A change of type checks the stored configs against the new type's executor;
    a caller that writes the configs next (the admin, the importers) passes
    ``_check_configs=False`` and calls ``check_tool_configs`` once they are written.
    """
    unknown = set(data) - set(TOOL_FIELDS)
    if unknown:
        raise TypeError(f"unknown tool fields: {sorted(unknown)}")
    tool = Tool.objects.select_for_update().get(pk=tool.pk)
    check_tool_change(actor, tool, data)
    before = tool_snapshot(tool)
    for field, value in data.items():
        setattr(tool, field, value)
    _check_tool_finite(tool)
    _check_metadata(tool.tool_metadata)
    full_clean(tool, exclude=["created_by"])
    _check_approval_condition(tool)
    _check_cacheable(tool)
    if "name" in data and data["name"] != before["name"]:
        _unique_name_or_conflict(tool.name, exclude_pk=tool.pk)
    if _check_configs and tool.type != before["type"]:
        check_tool_configs(tool)
    after = tool_snapshot(tool)
    if after == before:
        return tool
    if _definition_moved(before, after):
        tool.definition_changed_at = timezone.now()
    _save(tool, f"A tool named '{tool.name}' already exists.", "name")
    action = "tool.updated"
    if set(data) == {"is_active"}:
        action = "tool.activated" if tool.is_active else "tool.deactivated"
    audit_record(actor=actor, action=action, target=tool, before=before, after=after)
    if _mcp_link_moved(before, after):
        _store_remote_tool_name(actor, tool)
    if before["type"] != after["type"]:
        _store_python_function(actor, tool)
    if before["name"] != after["name"] or before["description"] != after["description"]:
        _approved_definition_follows(tool.pk, tool)
    return tool


def tool_deactivate(*, actor, tool: Tool) -> Tool:
    return tool_update(actor=actor, tool=tool, data={"is_active": False})


def tool_activate(*, actor, tool: Tool) -> Tool:
    return tool_update(actor=actor, tool=tool, data={"is_active": True})


@transaction.atomic
def tool_delete(*, actor, tool: Tool) -> None:
    """Hard-delete a tool that nothing references; otherwise 409 (deactivate it instead)."""
    policy.policy_check(actor=actor, action="tool.delete", tool=tool)
    tool = Tool.objects.select_for_update().get(pk=tool.pk)
    snapshot = tool_snapshot(tool)
    snapshot["parameters"] = [parameter_snapshot(p) for p in tool.parameters.all()]
    snapshot["configs"] = [config_snapshot(c) for c in tool.configs.all()]
    snapshot["grants"] = [
        {"role": g.role.name, "action": g.action} for g in tool.grants.select_related("role")
    ]
    blockers = tool_references(tool)
    if blockers:
        raise Conflict(
            f"Tool '{tool.name}' is referenced by {', '.join(blockers)} and cannot be deleted; "
            "deactivate it instead.",
            code="tool_in_use",
            details={"referenced_by": blockers},
        )
    tool_repr, tool_pk = str(tool), str(tool.pk)
    try:
        with transaction.atomic():
            tool.delete()
    except (ProtectedError, RestrictedError) as exc:
        raise Conflict(
            f"Tool '{tool_repr}' is still referenced and cannot be deleted; deactivate it instead.",
            code="tool_in_use",
        ) from exc
    audit_record(
        actor=actor,
        action="tool.deleted",
        target_type=Tool._meta.label_lower,
        target_id=tool_pk,
        target_repr=tool_repr,
        before=snapshot,
    )


def tool_references(tool: Tool) -> list[str]:
    """Names of the records that keep this tool from being hard-deleted.

    Parameters and configs belong to the tool and go with it; anything else
    pointing at it (executions, grants, rate limits) is history or policy and
    blocks deletion.
    """
    from registry.models import ToolGrant, ToolGroupObjectPermission, ToolUserObjectPermission

    # Grants are policy about the tool and go with it (recorded in the
    # deletion's audit snapshot); history such as executions blocks deletion.
    owned = {
        ToolParameter,
        ToolConfig,
        ToolGrant,
        ToolGroupObjectPermission,
        ToolUserObjectPermission,
    }
    found = []
    for rel in Tool._meta.related_objects:
        if rel.related_model in owned or not (rel.one_to_many or rel.one_to_one):
            continue
        if rel.related_model.objects.filter(**{rel.field.name: tool}).exists():
            found.append(rel.related_model._meta.verbose_name_plural.__str__())
    return found
