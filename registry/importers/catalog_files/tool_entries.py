"""A tool entry (in ``tools:`` or a single-tool document) read into a ``ToolSpec``."""

from __future__ import annotations

from typing import Any

from registry.importers.catalog_files.fields import set_if_given
from registry.importers.catalog_files.parsed import Parsed
from registry.importers.specs import (
    CONFIG_KEY_RE,
    MISSING,
    TOOL_NAME_RE,
    Entry,
    ToolSpec,
)
from registry.models.tools import ToolType
from registry.schema_rows import SchemaProblem, schema_to_rows
from registry.services import tools as tool_services
from registry.services.catalog import KEEP_SECRET
from toolhub.api.serializers import any_case_choice

COMMON_TOOL_KEYS = {
    "name",
    "description",
    "version",
    "category",
    "speed",
    "safety",
    "metadata",
    "is_active",
    "timeout_seconds",
    "max_retries",
    "cache_ttl_seconds",
    "max_concurrency",
    "max_response_bytes",
    "requires_approval",
    "module",
    "function",
    "mcp_server",
    "remote_tool_name",
    "parameters_schema",
    "input_schema",
    "output_schema",
    "configs",
    "secret_configs",
}
CATALOG_TOOL_KEYS = COMMON_TOOL_KEYS | {"type"}
SINGLE_TOOL_KEYS = COMMON_TOOL_KEYS | {"type", "tool_type", "disable_parallel"}


def extra_tool_fields() -> list[str]:
    """Tool fields without a check of their own here: passed on, the services validate them."""
    return [
        f
        for f in tool_services.TOOL_FIELDS
        if f not in COMMON_TOOL_KEYS | {"type", "tool_metadata"}
    ]


METADATA_KEYS = ("category", "speed", "safety")


# --------------------------------------------------------------------------- tools


def _schema_rows(entry: Entry, key: str, parsed: Parsed, parameter_type: str) -> Any:
    schema = entry.mapping(key)
    if schema is MISSING:
        return MISSING
    warnings: list[str] = []
    try:
        rows = schema_to_rows(schema, parameter_type=parameter_type, warnings=warnings)
    except SchemaProblem as exc:
        entry.error(f"{key}{exc.path}", exc.message)
        return MISSING
    for message in warnings:
        parsed.warnings.append(entry.doc.problem(entry.key_path(key), message, "schema"))
    return rows


def _tool_name_and_type(entry: Entry, *, single: bool) -> tuple[Any, Any]:
    name = entry.string("name", required=True)
    if name is not MISSING and not TOOL_NAME_RE.fullmatch(name):
        entry.error("name", "use 1 to 64 characters: letters, digits, '_' or '-'")
    type_key = "tool_type" if single else "type"
    tool_type = any_case_choice(entry.string(type_key), ToolType.values)  # "HTTP" too
    if tool_type is not MISSING and tool_type not in ToolType.values:
        entry.error(type_key, f"must be one of {', '.join(ToolType.values)}")
    return name, tool_type


def _tool_fields(entry: Entry, extras: list[str]) -> dict[str, Any]:
    """The tool's own fields the entry gives, each checked as the tool services would."""
    fields: dict[str, Any] = {}
    set_if_given(fields, "description", entry.string("description"))
    set_if_given(fields, "version", entry.string("version", max_length=32))
    for key in ("is_active", "requires_approval"):
        set_if_given(fields, key, entry.boolean(key))
    for key, low, high in (
        ("timeout_seconds", 1, 3600),
        ("max_retries", 0, 10),
        ("cache_ttl_seconds", 0, None),
        ("max_response_bytes", 1024, None),
    ):
        set_if_given(fields, key, entry.integer(key, minimum=low, maximum=high))
    set_if_given(
        fields, "max_concurrency", entry.integer("max_concurrency", minimum=1, nullable=True)
    )
    for key in extras:
        if entry.has(key):
            fields[key] = entry.any(key)
    return fields


def _apply_disable_parallel(entry: Entry, fields: dict[str, Any]) -> None:
    """A single-tool document's ``disable_parallel``: true is ``max_concurrency: 1``."""
    disable = entry.boolean("disable_parallel")
    if disable is True:
        if fields.get("max_concurrency", 1) != 1:
            entry.error("disable_parallel", "contradicts max_concurrency (true means 1)")
        fields["max_concurrency"] = 1
    elif disable is False and "max_concurrency" not in fields:
        fields["_allow_parallel"] = True


def _tool_metadata(entry: Entry) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    extra = entry.mapping("metadata")
    if extra is not MISSING:
        metadata.update(extra)
    for key in METADATA_KEYS:
        set_if_given(metadata, key, entry.string(key, nullable=True))
    return metadata


def _plain_configs(entry: Entry) -> dict[str, Any]:
    configs: dict[str, Any] = {}
    raw_configs = entry.mapping("configs")
    if raw_configs is not MISSING:
        for key, value in raw_configs.items():
            if not CONFIG_KEY_RE.fullmatch(key):
                entry.error(f"configs/{key}", "config keys use letters, digits, '_', '.' or '-'")
            configs[key] = value
    return configs


def _secret_configs(entry: Entry) -> dict[str, Any]:
    """Secret configs: a list of names (keep what is stored) or ``{key: value}``."""
    secrets: dict[str, Any] = {}
    raw_secrets = entry.any("secret_configs")
    if isinstance(raw_secrets, list):
        for index, key in enumerate(raw_secrets):
            if not isinstance(key, str) or not CONFIG_KEY_RE.fullmatch(key):
                entry.error(f"secret_configs/{index}", "must be a config key")
            else:
                secrets[key] = KEEP_SECRET
    elif isinstance(raw_secrets, dict):
        for key, value in raw_secrets.items():
            if not CONFIG_KEY_RE.fullmatch(key):
                entry.error(f"secret_configs/{key}", "must be a config key")
            secrets[key] = KEEP_SECRET if value is None else value
    elif raw_secrets is not MISSING:
        entry.error("secret_configs", "must be a list of config keys or a mapping key: value")
    return secrets


def _add_python_target(entry: Entry, configs: dict[str, Any]) -> None:
    """A Python tool's ``module`` and ``function``, stored as configs."""
    for key in ("module", "function"):
        value = entry.string(key)
        if value is MISSING:
            continue
        if key in configs:
            entry.error(key, f"'{key}' is given twice (also under configs)")
        configs[key] = value


def _tool_parameters(entry: Entry, parsed: Parsed) -> tuple[Any, Any]:
    """The input and output parameter rows, from the entry's JSON Schemas."""
    if entry.has("parameters_schema") and entry.has("input_schema"):
        entry.error("input_schema", "give parameters_schema or input_schema, not both")
    schema_key = "input_schema" if entry.has("input_schema") else "parameters_schema"
    parameters = _schema_rows(entry, schema_key, parsed, "input")
    outputs = _schema_rows(entry, "output_schema", parsed, "output")
    return parameters, outputs


def _default_type(mcp_server: Any, configs: dict[str, Any]) -> str:
    """The type a new tool gets when the entry does not say: what its configs suggest."""
    if mcp_server is not MISSING:
        return ToolType.MCP
    if "module" in configs or "function" in configs:
        return ToolType.PYTHON
    if "base_url" in configs or "endpoint" in configs:
        return ToolType.HTTP
    return ToolType.PYTHON


def _given(value: Any) -> Any:
    return None if value is MISSING else value


def parse_tool(entry: Entry, parsed: Parsed, *, single: bool) -> ToolSpec | None:
    errors_before = len(parsed.errors)
    extras = extra_tool_fields()
    entry.report_unknown((SINGLE_TOOL_KEYS if single else CATALOG_TOOL_KEYS) | set(extras))
    name, tool_type = _tool_name_and_type(entry, single=single)
    fields = _tool_fields(entry, extras)
    if single:
        _apply_disable_parallel(entry, fields)
    metadata = _tool_metadata(entry)
    configs = _plain_configs(entry)
    secrets = _secret_configs(entry)
    for key in sorted(set(configs) & set(secrets)):
        entry.error(f"secret_configs/{key}", "is also listed under configs")
    _add_python_target(entry, configs)
    mcp_server = entry.string("mcp_server")
    remote = entry.string("remote_tool_name")
    if mcp_server is not MISSING and tool_type not in (MISSING, ToolType.MCP):
        entry.error("mcp_server", f"only tools of type 'mcp' have a server (type is {tool_type})")
    parameters, outputs = _tool_parameters(entry, parsed)
    if len(parsed.errors) > errors_before or name is MISSING:
        return None
    return ToolSpec(
        path=entry.path,
        document=entry.doc,
        name=name,
        type=_given(tool_type),
        default_type=_default_type(mcp_server, configs),
        fields=fields,
        metadata=metadata or None,
        parameters=_given(parameters),
        output_parameters=_given(outputs),
        configs=configs or None,
        secret_configs=secrets or None,
        mcp_server=_given(mcp_server),
        remote_tool_name=_given(remote),
    )
