"""Catalog files: ``tools:`` / ``mcp_servers:`` lists (tools.yml, mcp.yml) and single-tool documents.

A tool entry (in ``tools:``, or a ``type: tool`` document) may carry:

=====================  ===============================================================
``name``               required, ``[a-zA-Z0-9_-]{1,64}``
``type``               tool type (``http``/``database``/``mcp``/``python``, any letter
                       case); in a single-tool document the type is ``tool_type``
                       (``type`` is ``tool``)
``description``,       text
``version``
``category``,          ``tool_metadata`` keys (``null`` removes one); ``metadata``: other
``speed``, ``safety``  ``tool_metadata`` keys, merged key by key
``module``,            a Python tool's module and registered function, stored as configs
``function``           (nothing is ever imported from them)
``mcp_server``,        an MCP tool's server (by name) and its name on that server
``remote_tool_name``
``parameters_schema``  the input JSON Schema (an object; ``input_schema`` is the same)
``output_schema``      the output JSON Schema
``configs``            plain configs ``{key: value}``
``secret_configs``     names of secret configs (values are never exported), or
                       ``{key: value}`` to set secrets (stored encrypted)
``is_active``,         the tool's fields (every field the tool services accept); a
``timeout_seconds``,   single-tool document may say ``disable_parallel: true`` for
``max_retries``, …     ``max_concurrency: 1``
=====================  ===============================================================

An MCP server entry: ``name``, ``description``, ``transport`` (default
``streamable_http`` with a ``url``, ``stdio`` with a ``command``), ``url``,
``command``, ``args``, ``env``, ``auth: {type: bearer, token_env_var: VAR}``
(or ``token: …``, stored encrypted; ``type: none`` clears), ``provides_tools``
(= ``tools_allowed``), ``tools_denied``, ``timeout_seconds``,
``max_concurrency``, ``is_enabled``, ``tool_prefix``.

Keys left out leave the stored value alone; unknown keys are reported."""

from registry.importers.catalog_files.documents import (
    check_repeats,
    parse_catalog,
    parse_single,
)
from registry.importers.catalog_files.parsed import Parsed
from registry.importers.catalog_files.server_entries import (
    AUTH_KEYS,
    SERVER_KEYS,
    TRANSPORT_ALIASES,
    parse_server,
)
from registry.importers.catalog_files.tool_entries import (
    CATALOG_TOOL_KEYS,
    COMMON_TOOL_KEYS,
    METADATA_KEYS,
    SINGLE_TOOL_KEYS,
    extra_tool_fields,
    parse_tool,
)

__all__ = [
    "AUTH_KEYS",
    "CATALOG_TOOL_KEYS",
    "COMMON_TOOL_KEYS",
    "METADATA_KEYS",
    "SERVER_KEYS",
    "SINGLE_TOOL_KEYS",
    "TRANSPORT_ALIASES",
    "Parsed",
    "check_repeats",
    "extra_tool_fields",
    "parse_catalog",
    "parse_server",
    "parse_single",
    "parse_tool",
]
