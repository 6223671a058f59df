"""Writes to the tool catalog. Each write appends its audit event in the same transaction."""

from __future__ import annotations

import logging
import math
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.db import DataError, IntegrityError, transaction
from django.db.models import ProtectedError, Q, RestrictedError
from django.utils import timezone

from registry import access
from registry import schema as schema_mod
from registry.hooks import ConfigValueError, config_spec, encrypted_fields
from registry.models import MCPServer, Tool, ToolConfig, ToolParameter
from registry.services.audit import audit_record
from registry.services.validation import full_clean, raise_invalid
from toolhub import text as text_rules
from toolhub.exceptions import Conflict, PermissionDenied

logger = logging.getLogger(__name__)

TOOL_FIELDS = (
    "name",
    "description",
    "type",
    "version",
    "tool_metadata",
    "is_active",
    "timeout_seconds",
    "max_retries",
    "cache_ttl_seconds",
    "max_concurrency",
    "max_response_bytes",
    "requires_approval",
    "approval_condition",
    "approval_ttl_seconds",
)
PARAMETER_FIELDS = (
    "name",
    "parameter_type",
    "type",
    "required",
    "description",
    "default",
    "json_schema",
    "position",
)


# Snapshots: what the audit log keeps of an object (secrets masked).


def tool_snapshot(tool: Tool) -> dict[str, Any]:
    data = {field: getattr(tool, field) for field in TOOL_FIELDS}
    data["id"] = str(tool.pk)
    return data


def parameter_snapshot(param: ToolParameter) -> dict[str, Any]:
    data = {field: getattr(param, field) for field in PARAMETER_FIELDS}
    data.update(id=str(param.pk), tool_id=str(param.tool_id), has_default=param.has_default)
    return data


def config_snapshot(config: ToolConfig) -> dict[str, Any]:
    return {
        "id": str(config.pk),
        "tool_id": str(config.tool_id),
        "config_key": config.config_key,
        "is_secret": config.is_secret,
        "config_value": config.display_value,
    }


NON_IDEMPOTENT_METHODS = {"POST", "PATCH", "PUT", "DELETE"}


def _read_config(tool_type: str, configs: dict[str, Any], key: str, fallback: Any) -> Any:
    """A config as the executor reads it; ``fallback`` when the executor could not use it."""
    spec = config_spec(tool_type)
    if spec is None:
        return fallback
    try:
        return spec.read(configs, key)
    except ConfigValueError:
        return fallback


def cacheability_problem(tool: Tool, configs: dict[str, Any] | None = None) -> str | None:
    """Why results of ``tool`` must not be cached (None when they may)."""
    if configs is None:
        configs = {c.config_key: c for c in tool.configs.all()}
    plain = {k: (c.plain_value if not c.is_secret else None) for k, c in configs.items()}
    if tool.type == "http":
        method = _read_config("http", plain, "method", str(plain.get("method")).upper())
        if method in NON_IDEMPOTENT_METHODS:
            return f"its method {method} is not idempotent"
        if "headers_input_map" in configs:
            return "it takes per-call secrets (headers_input_map)"
    if tool.type == "database" and not _read_config("database", plain, "read_only", True):
        return "it may write (read_only is false)"
    return None


def _check_cacheable(tool: Tool, configs: dict | None = None) -> None:
    if not tool.cache_ttl_seconds:
        return
    problem = cacheability_problem(tool, configs)
    if problem:
        raise_invalid(
            [
                {
                    "field": "cache_ttl_seconds",
                    "message": f"Results of this tool cannot be cached: {problem}. Set it to 0.",
                    "code": "not_cacheable",
                }
            ]
        )


def config_problem(tool_type: str, key: str, value: Any, *, secret: bool = False) -> str | None:
    """Why ``value`` cannot be config ``key`` of a ``tool_type`` tool (None when it can).

    The executor of that type declares the keys it knows and their values
    (``CONFIGS`` in its module); keys it does not know are allowed. A secret's
    value is never quoted.
    """
    spec = config_spec(tool_type)
    if spec is None:
        return None
    return spec.problem(key, value, secret=secret)


def _check_config(tool: Tool, key: str, value: Any, *, secret: bool, field: str) -> None:
    # Named as given (the value is stored in one of two columns, a secret encrypted).
    text_rules.refuse_unstorable({field: value})
    message = config_problem(tool.type, key, value, secret=secret)
    if message:
        raise_invalid([{"field": field, "message": message, "code": "invalid_config"}])


def check_tool_configs(tool: Tool, *, field: str = "type") -> None:
    """Refuse a tool whose stored configs do not suit its type (after a change of type)."""
    problems = []
    for config in tool.configs.all():
        message = config_problem(
            tool.type, config.config_key, config.value, secret=config.is_secret
        )
        if message:
            problems.append(
                {
                    "field": field,
                    "message": f"A stored config does not suit the {tool.type} executor. {message}",
                    "code": "invalid_config",
                }
            )
    if problems:
        raise_invalid(problems)


# What ties an ``mcp`` tool to a registered MCP server (whose stored token and
# environment its calls then use) and to one remote tool of it: the sync writes
# these. Anyone else who could set them could call any tool of any server with its
# credentials, past its grants and the server's tools_allowed/denied.
MCP_LINK_CONFIGS = ("server_id", "remote_tool_name", "server")
# Configs that lend a tool credentials the operator holds (TOOLHUB_DATABASE_ALIASES):
# like MCP links, only platform admins set them.
LENT_CREDENTIAL_CONFIGS = ("connection_alias",)
# Which inputs are callers' per-call secrets and where they go: removing the map,
# moving the destination and adding it back would send callers' secrets elsewhere.
PER_CALL_SECRET_CONFIGS = ("headers_input_map",)
# Metadata that decides how a tool fails when a control is down (fail closed).
RISK_METADATA = ("risk", "safety")
MCP_LINK_METADATA = ("mcp_server", "mcp_server_id", "remote_tool_name")


def fallback_remote_tool_name(tool_name: str, server_name: str) -> str:
    """The remote tool an ``mcp`` tool without ``remote_tool_name`` used to call: its
    own name without the ``<server>__`` prefix. Only read when the link is made, to
    store the answer; a call never derives it (a rename would move it)."""
    if server_name and tool_name.startswith(f"{server_name}__"):
        return tool_name[len(server_name) + 2 :]
    if not server_name and "__" in tool_name:
        return tool_name.split("__", 1)[1]
    return tool_name


def _linked_server_name(tool: Tool) -> str | None:
    """The name of the server an ``mcp`` tool is linked to (``""`` for an inline server
    without a name), or None when it is linked to none."""
    configs = {c.config_key: c for c in tool.configs.all()}
    if "server" in configs:
        inline = configs["server"].value
        return str(inline.get("name") or "") if isinstance(inline, dict) else ""
    server_id = configs["server_id"].value if "server_id" in configs else None
    server_id = server_id or (tool.tool_metadata or {}).get("mcp_server_id")
    if not server_id:
        return None
    try:
        server = MCPServer.objects.filter(pk=str(server_id).strip()).only("name").first()
    except (ValueError, TypeError, ValidationError):
        server = None
    return server.name if server is not None else ""


def _store_remote_tool_name(actor, tool: Tool) -> None:
    """Fix which remote tool a linked ``mcp`` tool calls, when the link is made without
    saying: what its name says now, stored as ``remote_tool_name`` (which only
    platform admins change), so that renaming the tool later changes nothing."""
    if tool.type != "mcp" or tool.configs.filter(config_key="remote_tool_name").exists():
        return
    server_name = _linked_server_name(tool)
    if server_name is None:
        return
    remote = fallback_remote_tool_name(tool.name, server_name)
    config_set(actor=actor, tool=tool, config_key="remote_tool_name", config_value=remote)


def _check_mcp_link(actor, tool: Tool, *, config_key: str | None = None, data=None) -> None:
    """Only platform admins (and the system: syncs, imports by command) change an MCP link."""
    if actor is None or access.is_platform_admin(actor):
        return
    changes = []
    if config_key in MCP_LINK_CONFIGS and tool.type == "mcp":
        changes.append(config_key)
    if data and "type" in data and (data["type"] == "mcp") != (tool.type == "mcp"):
        changes.append("type")
    if data and "tool_metadata" in data:
        old, new = tool.tool_metadata or {}, data["tool_metadata"] or {}
        changes += [f"tool_metadata.{k}" for k in MCP_LINK_METADATA if old.get(k) != new.get(k)]
    if changes:
        raise PermissionDenied(
            "Only platform admins may link a tool to an MCP server, change its remote tool "
            "or turn a tool into an MCP tool or back.",
            details=[{"field": f, "message": "Platform admins only."} for f in changes],
        )


def _check_managed_change(
    actor, tool: Tool, *, part: str, config_key: str | None = None, data=None
) -> None:
    """What a per-tool ``manage`` right does not cover (platform admins and the system may):

    * a name in a registered MCP server's namespace (``_check_namespace``);
    * configs that lend the operator's connections or route callers' per-call
      secrets, and the risk metadata that decides whether calls fail closed;
    * the parameters, configs and type of a tool under human approval: whether a
      call needs approval, and what an approved call does, depend on them (renaming
      the parameter an approval condition reads let every call through);
    * where a tool carrying secrets sends its calls (``destination`` keys, its
      type): the secrets would go along, to a server of the manager's choice; and
      how it sends them (``sends_credentials`` keys: ``auth_type``, the API key's
      header).
    """
    if actor is None or access.is_platform_admin(actor):
        return
    if data and data.get("name") not in (None, tool.name):
        _check_namespace(tool, str(data["name"]))
    if config_key in LENT_CREDENTIAL_CONFIGS:
        raise PermissionDenied(
            f"Only platform admins set '{config_key}': it lends the tool a connection the "
            "operator holds.",
            details=[{"field": "config_key", "message": "Platform admins only."}],
        )
    if config_key in PER_CALL_SECRET_CONFIGS:
        raise PermissionDenied(
            f"Only platform admins change '{config_key}': it decides where callers' "
            "per-call secrets go.",
            details=[{"field": "config_key", "message": "Platform admins only."}],
        )
    if data and "tool_metadata" in data:
        old, new = tool.tool_metadata or {}, data["tool_metadata"] or {}
        moved = [k for k in RISK_METADATA if old.get(k) != new.get(k)]
        if moved:
            raise PermissionDenied(
                "Only platform admins change a tool's risk: it decides whether its calls "
                "are refused when a control cannot be checked.",
                details=[
                    {"field": f"tool_metadata.{k}", "message": "Platform admins only."}
                    for k in moved
                ],
            )
    retyped = bool(data) and "type" in data and data["type"] != tool.type
    if tool.requires_approval and (part in ("parameter", "config") or retyped):
        raise PermissionDenied(
            f"'{tool.name}' requires human approval: only platform admins change its "
            "parameters, configs and type, since what needs approval depends on them."
        )
    resends = False
    if config_key is not None:
        spec = config_spec(tool.type)
        key = spec.keys.get(config_key) if spec is not None else None
        moves = key is not None and key.destination
        resends = key is not None and key.sends_credentials
    else:
        moves = retyped
    if (moves or resends) and _carries_secrets(tool, config_key):
        what = f"config '{config_key}'" if config_key else "type"
        how = "how its credentials are sent" if resends else "where its calls go"
        raise PermissionDenied(
            f"'{tool.name}' holds secret configs or takes per-call secrets: only platform "
            f"admins change {how} ({what}), since the secrets go with them."
        )


def _carries_secrets(tool: Tool, changing: str | None) -> bool:
    """Whether calls of ``tool`` carry secrets: secret configs (other than the one being
    replaced) or per-call secret inputs (``headers_input_map``)."""
    configs = tool.configs.exclude(config_key=changing) if changing else tool.configs.all()
    return configs.filter(Q(is_secret=True) | Q(config_key__in=PER_CALL_SECRET_CONFIGS)).exists()


def _check_namespace(tool: Tool, name: str) -> None:
    """``<server>__…`` names belong to the tools synced from that MCP server: a tool
    renamed into it would pass for one of them (and push the real one aside)."""
    if "__" not in name:
        return
    own = str((tool.tool_metadata or {}).get("mcp_server_id") or "")
    for server in MCPServer.objects.only("pk", "name"):
        # Server names may hold underscores themselves (gh_, my__srv): test each prefix.
        if name.startswith(f"{server.name}__") and own != str(server.pk):
            raise PermissionDenied(
                f"Names starting with '{server.name}__' belong to the tools of MCP server "
                f"'{server.name}'; only platform admins give a tool such a name.",
                details=[{"field": "name", "message": "Platform admins only."}],
            )


def _check_approval_condition(tool: Tool) -> None:
    problems = schema_mod.fragment_errors(tool.approval_condition or {})
    if problems:
        raise_invalid(
            [{"field": "approval_condition", "message": problems[0], "code": "invalid_schema"}]
        )


# Execution.cost is DECIMAL(12, 6): a cost per call below one million, six decimals kept.
COST_PER_CALL_LIMIT = Decimal(10) ** 6


def _check_metadata(metadata: Any) -> None:
    if not isinstance(metadata, dict):
        raise_invalid(
            [{"field": "tool_metadata", "message": "Must be a JSON object.", "code": "invalid"}]
        )
    cost = metadata.get("cost_per_call")
    if cost is None:
        return
    try:
        if isinstance(cost, bool) or not isinstance(cost, int | float | str):
            raise InvalidOperation
        value = Decimal(str(cost).strip())
    except (InvalidOperation, ValueError):
        value = None
    if value is None or not value.is_finite() or not 0 <= value < COST_PER_CALL_LIMIT:
        raise_invalid(
            [
                {
                    "field": "tool_metadata.cost_per_call",
                    "message": "Must be a number (or a decimal string) from 0 to below "
                    f"{COST_PER_CALL_LIMIT:,}; got {str(cost)[:40]!r}.",
                    "code": "invalid",
                }
            ]
        )


def _unique_name_or_conflict(name: str, exclude_pk=None) -> None:
    qs = Tool.objects.filter(name=name)
    if exclude_pk is not None:
        qs = qs.exclude(pk=exclude_pk)
    if qs.exists():
        raise Conflict(
            f"A tool named '{name}' already exists.",
            code="duplicate_name",
            details=[{"field": "name", "message": "Already in use.", "code": "unique"}],
        )


def non_finite_path(value: Any, path: str = "") -> str | None:
    """Where ``value`` holds a number JSON cannot carry (NaN, Infinity); None when nowhere.

    The answer is ``path`` followed by the keys and indexes leading to the number.
    Walks nested lists and objects without recursion, so any depth is safe.
    """
    stack = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return where
        elif isinstance(item, Decimal):
            if not item.is_finite():
                return where
        elif isinstance(item, dict):
            stack.extend((v, f"{where}.{k}" if where else str(k)) for k, v in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(item))
    return None


def non_finite_message(where: str) -> str:
    at = f" at {where}" if where else ""
    return (
        f"Holds a number JSON cannot carry{at}: NaN and Infinity are not JSON values "
        "(numbers must be finite; use null or a string instead)."
    )


def _check_finite(values: dict[str, Any], prefix: str = "") -> None:
    """Refuse NaN and Infinity in JSON values, naming the field (``prefix.field``) of each."""
    problems = []
    for field, value in values.items():
        where = non_finite_path(value, field)
        if where is not None:
            problems.append(
                {
                    "field": f"{prefix}.{field}" if prefix else field,
                    "message": non_finite_message(where),
                    "code": "not_finite",
                }
            )
    if problems:
        raise_invalid(problems)


def _check_tool_finite(tool: Tool) -> None:
    _check_finite(
        {"tool_metadata": tool.tool_metadata, "approval_condition": tool.approval_condition}
    )


# SQLSTATE of a unique violation (PostgreSQL); SQLite says so in its message.
_UNIQUE_VIOLATION = "23505"


def _is_unique_violation(exc: IntegrityError) -> bool:
    cause = exc.__cause__
    code = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    if code:
        return code == _UNIQUE_VIOLATION
    return "UNIQUE constraint failed" in str(exc)


def _save(instance, conflict_message: str, field: str, prefix: str = "") -> None:
    """Save ``instance``: a unique violation is a 409 naming ``field``; any other refusal a 400.

    The checks before a save should leave the database nothing to refuse; if it
    still does (a constraint, a value its column cannot hold), say so plainly
    rather than calling it a duplicate.
    """
    try:
        with transaction.atomic():
            instance.save()
    except (IntegrityError, DataError) as exc:
        if isinstance(exc, IntegrityError) and _is_unique_violation(exc):
            raise Conflict(
                conflict_message,
                code="duplicate",
                details=[
                    {
                        "field": f"{prefix}.{field}" if prefix else field,
                        "message": "Already in use.",
                        "code": "unique",
                    }
                ],
            ) from exc
        logger.warning("saving a %s was refused: %s", instance._meta.label_lower, exc)
        raise_invalid(
            [
                {
                    "field": prefix or None,
                    "message": f"The database refused this {instance._meta.verbose_name}: one of "
                    "its values cannot be stored (a JSON value with NaN or Infinity, or a "
                    "number beyond its field's range).",
                    "code": "rejected",
                }
            ]
        )


# Tools


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
    _check_cacheable(tool)
    return tool


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
    _check_mcp_link(actor, tool, data=data)
    _check_managed_change(actor, tool, part="tool", data=data)
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
    return tool


def tool_deactivate(*, actor, tool: Tool) -> Tool:
    return tool_update(actor=actor, tool=tool, data={"is_active": False})


def tool_activate(*, actor, tool: Tool) -> Tool:
    return tool_update(actor=actor, tool=tool, data={"is_active": True})


@transaction.atomic
def tool_delete(*, actor, tool: Tool) -> None:
    """Hard-delete a tool that nothing references; otherwise 409 (deactivate it instead)."""
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


# Parameters


def _validate_parameter(param: ToolParameter, prefix: str) -> None:
    def field(name):
        return f"{prefix}.{name}" if prefix else name

    _check_finite({"default": param.default, "json_schema": param.json_schema}, prefix)
    full_clean(param, exclude=["tool"], prefix=prefix)
    problems = [
        {"field": field("json_schema"), "message": m, "code": "invalid_schema"}
        for m in schema_mod.fragment_errors(param.json_schema)
    ]
    if not problems and param.has_default:
        problems = [
            {"field": field("default"), "message": m, "code": "invalid_default"}
            for m in schema_mod.default_errors(param.type, param.json_schema, param.default)
        ]
    if problems:
        raise_invalid(problems)


def _unique_parameter(param: ToolParameter, prefix: str) -> None:
    clash = ToolParameter.objects.filter(
        tool_id=param.tool_id, parameter_type=param.parameter_type, name=param.name
    ).exclude(pk=param.pk)
    if clash.exists():
        field = f"{prefix}.name" if prefix else "name"
        raise Conflict(
            f"Tool already has an {param.parameter_type} parameter named '{param.name}'.",
            code="duplicate_parameter",
            details=[{"field": field, "message": "Already in use.", "code": "unique"}],
        )


@transaction.atomic
def parameter_create(
    *, actor, tool: Tool, _prefix: str = "", _creating: bool = False, **data: Any
) -> ToolParameter:
    unknown = set(data) - set(PARAMETER_FIELDS)
    if unknown:
        raise TypeError(f"unknown parameter fields: {sorted(unknown)}")
    if not _creating:  # creating a tool is a platform admin's (or the system's) act
        _check_managed_change(actor, tool, part="parameter")
    if "position" not in data and not _creating:
        # Added one at a time, parameters keep the order they were added in.
        last = (
            tool.parameters.filter(parameter_type=data.get("parameter_type", "input"))
            .order_by("-position")
            .values_list("position", flat=True)
            .first()
        )
        data["position"] = 0 if last is None else last + 1
    has_default = "default" in data
    param = ToolParameter(tool=tool, has_default=has_default, **data)
    if param.json_schema is None:
        param.json_schema = {}
    _validate_parameter(param, _prefix)
    _unique_parameter(param, _prefix)
    _save(param, f"Duplicate parameter '{param.name}'.", "name", _prefix)
    if not _creating:  # tool_create: the tool row was written just now
        _definition_changed(tool.pk)
    audit_record(
        actor=actor, action="tool_parameter.created", target=param, after=parameter_snapshot(param)
    )
    return param


@transaction.atomic
def parameter_update(*, actor, parameter: ToolParameter, data: dict[str, Any]) -> ToolParameter:
    unknown = set(data) - set(PARAMETER_FIELDS) - {"has_default"}
    if unknown:
        raise TypeError(f"unknown parameter fields: {sorted(unknown)}")
    param = ToolParameter.objects.select_for_update().select_related("tool").get(pk=parameter.pk)
    _check_managed_change(actor, param.tool, part="parameter")
    before = parameter_snapshot(param)
    for field, value in data.items():
        setattr(param, field, value)
    if "default" in data and "has_default" not in data:
        param.has_default = True
    if not param.has_default:
        param.default = None
    if param.json_schema is None:
        param.json_schema = {}
    _validate_parameter(param, "")
    _unique_parameter(param, "")
    after = parameter_snapshot(param)
    if after == before:
        return param
    _save(param, f"Duplicate parameter '{param.name}'.", "name")
    if any(before.get(f) != after.get(f) for f in PARAMETER_DEFINITION_FIELDS):
        _definition_changed(param.tool_id)
    else:  # a description or position: the tool's page changed, not what a call does
        Tool.objects.filter(pk=param.tool_id).update(updated_at=timezone.now())
    audit_record(
        actor=actor, action="tool_parameter.updated", target=param, before=before, after=after
    )
    return param


@transaction.atomic
def parameter_delete(*, actor, parameter: ToolParameter) -> None:
    _check_managed_change(actor, parameter.tool, part="parameter")
    snapshot = parameter_snapshot(parameter)
    target_repr, target_id = str(parameter), str(parameter.pk)
    parameter.delete()
    _definition_changed(parameter.tool_id)
    audit_record(
        actor=actor,
        action="tool_parameter.deleted",
        target_type=ToolParameter._meta.label_lower,
        target_id=target_id,
        target_repr=target_repr,
        before=snapshot,
    )


def _definition_changed(tool_id) -> None:
    """A parameter or config of the tool was added, changed or removed: the tool's
    ``definition_changed_at`` says so (a call approved against it as it was, and
    results cached under it, must see that; a deletion leaves nothing else behind).
    """
    now = timezone.now()
    Tool.objects.filter(pk=tool_id).update(updated_at=now, definition_changed_at=now)


# What a call of the tool does depends on these fields (and on the MCP link in its
# metadata); its description and other metadata do not change it. The name does:
# a Python tool without a function config calls what its name says (an MCP tool
# calls its stored remote_tool_name).
DEFINITION_FIELDS = (
    "name",
    "type",
    "version",
    "timeout_seconds",
    "max_retries",
    "max_response_bytes",
    "requires_approval",
    "approval_condition",
    "approval_ttl_seconds",
)
# What a parameter means to a call (not its description or position).
PARAMETER_DEFINITION_FIELDS = (
    "name",
    "parameter_type",
    "type",
    "required",
    "default",
    "has_default",
    "json_schema",
)


def _mcp_link_moved(before: dict, after: dict) -> bool:
    """Whether an update made a tool an ``mcp`` tool or moved its link in the metadata."""
    if after.get("type") != "mcp":
        return False
    old, new = before.get("tool_metadata") or {}, after.get("tool_metadata") or {}
    return before.get("type") != "mcp" or old.get("mcp_server_id") != new.get("mcp_server_id")


def _definition_moved(before: dict, after: dict) -> bool:
    if any(before.get(f) != after.get(f) for f in DEFINITION_FIELDS):
        return True
    old, new = before.get("tool_metadata") or {}, after.get("tool_metadata") or {}
    return any(old.get(k) != new.get(k) for k in MCP_LINK_METADATA)


# Configs


@transaction.atomic
def config_set(
    *,
    actor,
    tool: Tool,
    config_key: str,
    config_value: Any,
    is_secret: bool | None = None,
    _prefix: str = "",
    _creating: bool = False,
) -> tuple[ToolConfig, bool]:
    """Create or replace the config ``config_key`` of ``tool``. Returns ``(config, created)``.

    When an existing key is updated without ``is_secret``, it keeps its
    secrecy: a secret is never turned into a plain value by accident. The value
    must suit the tool's executor (``config_problem``); it is checked before a
    secret is encrypted, and a refused secret is never quoted.
    """
    _check_finite({"config_value": config_value}, _prefix)
    _check_mcp_link(actor, tool, config_key=config_key)
    if not _creating:
        _check_managed_change(actor, tool, part="config", config_key=config_key)
    config = ToolConfig.objects.select_for_update().filter(tool=tool, config_key=config_key).first()
    created = config is None
    if created:
        config = ToolConfig(tool=tool, config_key=config_key, is_secret=bool(is_secret))
        before = None
    else:
        before = config_snapshot(config)
        if config.is_secret and is_secret is not None and not is_secret:
            # Turning a secret plain would show its value (kept, in the admin) or
            # a successor credential to everyone who reads the tool.
            raise_invalid(
                [
                    {
                        "field": f"{_prefix}.is_secret" if _prefix else "is_secret",
                        "message": (
                            f"Config '{config_key}' is secret and stays secret: to make it "
                            "a plain value, delete it and add it again."
                        ),
                        "code": "secret_stays_secret",
                    }
                ]
            )
        if is_secret is not None:
            config.is_secret = bool(is_secret)
    _check_config(
        tool,
        config_key,
        config_value,
        secret=config.is_secret,
        field=f"{_prefix}.config_value" if _prefix else "config_value",
    )
    config.set_value(config_value)
    full_clean(config, exclude=["tool"], prefix=_prefix)
    _save(config, f"Duplicate config key '{config_key}'.", "config_key", _prefix)
    if not _creating:  # tool_create: the row is new, its cacheability checked once at the end
        _definition_changed(tool.pk)
        _check_cacheable(tool)
    after = config_snapshot(config)
    action = "tool_config.created" if created else "tool_config.updated"
    audit_record(actor=actor, action=action, target=config, before=before, after=after)
    if config_key in ("server", "server_id") and not _creating:
        _store_remote_tool_name(actor, tool)
    return config, created


@transaction.atomic
def config_delete(*, actor, config: ToolConfig) -> None:
    _check_mcp_link(actor, config.tool, config_key=config.config_key)
    _check_managed_change(actor, config.tool, part="config", config_key=config.config_key)
    snapshot = config_snapshot(config)
    target_repr, target_id = str(config), str(config.pk)
    config.delete()
    _definition_changed(config.tool_id)
    audit_record(
        actor=actor,
        action="tool_config.deleted",
        target_type=ToolConfig._meta.label_lower,
        target_id=target_id,
        target_repr=target_repr,
        before=snapshot,
    )


@transaction.atomic
def secrets_reencrypt() -> int:
    """Re-encrypt every stored secret under the primary key (after a key rotation).

    Secret configs, MCP servers' bearer tokens and stdio environments, agents'
    webhook secrets and the sealed per-call secrets of calls not yet run (a
    call waiting for approval must still run once the old key is gone).
    """
    from registry import crypto
    from registry.models import Agent

    places = [
        ("secret configs", ToolConfig.objects.filter(is_secret=True), "encrypted_value"),
        ("MCP server tokens", MCPServer.objects.all(), "encrypted_auth_token"),
        ("MCP server environments", MCPServer.objects.all(), "encrypted_env"),
        ("agent webhook secrets", Agent.objects.all(), "webhook_secret"),
    ]
    # Columns of other apps (executions' sealed per-call secrets), registered at start-up.
    places += [(f.label, f.queryset(), f.field) for f in encrypted_fields()]
    counts: dict[str, int] = {}
    for label, queryset, field in places:
        counts[label] = 0
        rows = queryset.exclude(**{field: ""}).select_for_update().values_list("pk", field)
        for pk, token in rows:
            rotated = crypto.rotate(token)
            queryset.model.objects.filter(pk=pk, **{field: token}).update(**{field: rotated})
            counts[label] += 1
    count = sum(counts.values())
    audit_record(
        actor=None,
        action="secrets.reencrypted",
        target_type="registry.toolconfig",
        target_repr=", ".join(f"{n} {label}" for label, n in counts.items()),
        after={"count": count, **counts},
    )
    return count
