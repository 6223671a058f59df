"""Writes to the tool catalog. Each write appends its audit event in the same transaction.

One concept a module: ``lifecycle`` (a tool's create, update, (de)activate, delete),
``parameters``, ``configs`` (config values and secret re-encryption), ``config_checks``
(what a config value may be), ``field_checks`` (name, metadata, finite numbers),
``mcp_managed`` (which row of ``registry.policy`` a change takes; MCP links), ``definition`` (when a change moves the
definition callers cached), ``snapshots`` (the audit before/after) and ``saving``."""

from registry.services.tools.config_checks import (
    NON_IDEMPOTENT_METHODS,
    cacheability_problem,
    check_tool_configs,
    config_problem,
)
from registry.services.tools.configs import (
    config_delete,
    config_set,
    secrets_reencrypt,
)
from registry.services.tools.definition import (
    DEFINITION_FIELDS,
    PARAMETER_DEFINITION_FIELDS,
)
from registry.services.tools.field_checks import (
    COST_PER_CALL_LIMIT,
    non_finite_message,
    non_finite_path,
)
from registry.services.tools.lifecycle import (
    tool_activate,
    tool_create,
    tool_deactivate,
    tool_delete,
    tool_references,
    tool_update,
)
from registry.services.tools.mcp_managed import MCP_LINK_CONFIGS, fallback_remote_tool_name
from registry.services.tools.parameters import (
    parameter_create,
    parameter_delete,
    parameter_update,
)
from registry.services.tools.saving import _save
from registry.services.tools.snapshots import (
    PARAMETER_FIELDS,
    TOOL_FIELDS,
    config_snapshot,
    parameter_snapshot,
    tool_snapshot,
)

__all__ = [
    "COST_PER_CALL_LIMIT",
    "DEFINITION_FIELDS",
    "MCP_LINK_CONFIGS",
    "NON_IDEMPOTENT_METHODS",
    "PARAMETER_DEFINITION_FIELDS",
    "PARAMETER_FIELDS",
    "TOOL_FIELDS",
    "_save",
    "cacheability_problem",
    "check_tool_configs",
    "config_delete",
    "config_problem",
    "config_set",
    "config_snapshot",
    "fallback_remote_tool_name",
    "non_finite_message",
    "non_finite_path",
    "parameter_create",
    "parameter_delete",
    "parameter_snapshot",
    "parameter_update",
    "secrets_reencrypt",
    "tool_activate",
    "tool_create",
    "tool_deactivate",
    "tool_delete",
    "tool_references",
    "tool_snapshot",
    "tool_update",
]
