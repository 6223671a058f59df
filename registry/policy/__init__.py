"""Who may make which write: one table, checked by every write service first.

``POLICY`` names each write and what it takes: a platform right (``registry/rights.py``;
``ADMIN`` is "Grant access", which makes a platform admin) and/or a grant on the tool
written (``manage``). Where both are given, both are needed. A write that applies to
all tools (``tool`` None) and asks for a grant takes a platform admin instead.

Services call :func:`policy_check` before they write, whoever calls them (the API, the
admin, an importer, a sync); ``actor=None`` is the system (migrations, syncs run by
command) and may do anything. Views and admin pages ask :func:`policy_allows` to show
or hide a control; neither restates a rule.

Rows marked ``owner_may`` let the person who owns the subject of the write write too
(an agent's owner manages its tokens): the service names that person (``owner=``).

Rows marked ``own_control`` are controls over callers' calls (approval, guards, rate
limits). An agent never loosens one that governs its own calls, even when the table
otherwise lets it: the service says whether a change loosens (``loosens=True``).

Which row a change of a tool takes (its fields, configs, parameters) is decided here
too: "what runs" (the type, the config keys each executor declares ``target``: an HTTP
tool's URL and method, a database tool's connection, statement and ``read_only``, a
Python tool's function, an MCP tool's server and remote tool, anything of a command
tool; a parameter such a config names as ``{placeholder}``; the metadata importers and
syncs find their tools by) is a platform admin's.
"""

from registry.policy.changes import (
    ADMIN_ONLY_TYPES,
    APPROVAL_FIELDS,
    IMPORTER_METADATA,
    LENT_ACCOUNT_CONFIGS,
    MCP_LINK_METADATA,
    PER_CALL_SECRET_CONFIGS,
    RISK_CONFIGS,
    RISK_METADATA,
    WHAT_RUNS_METADATA,
    approval_loosens,
    check_actions,
    concurrency_loosens,
    config_actions,
    parameter_actions,
    reserved_name,
    target_configs,
    target_parameters,
    tool_change_loosens,
    tool_field_actions,
)
from registry.policy.table import (
    ADMIN,
    MANAGE,
    POLICY,
    Rule,
    policy_allows,
    policy_check,
    policy_refusal,
)

__all__ = [
    "ADMIN",
    "ADMIN_ONLY_TYPES",
    "APPROVAL_FIELDS",
    "IMPORTER_METADATA",
    "LENT_ACCOUNT_CONFIGS",
    "MANAGE",
    "MCP_LINK_METADATA",
    "PER_CALL_SECRET_CONFIGS",
    "POLICY",
    "RISK_CONFIGS",
    "RISK_METADATA",
    "WHAT_RUNS_METADATA",
    "Rule",
    "approval_loosens",
    "check_actions",
    "concurrency_loosens",
    "config_actions",
    "parameter_actions",
    "policy_allows",
    "policy_check",
    "policy_refusal",
    "reserved_name",
    "target_configs",
    "target_parameters",
    "tool_change_loosens",
    "tool_field_actions",
]
