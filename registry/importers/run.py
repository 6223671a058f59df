"""Import entry point: detect the format, check everything, then write in one transaction.

With any error nothing is written; a dry run does all the work (services and
their validation included) and rolls the transaction back.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from registry import crypto
from registry.importers import naming
from registry.importers.catalog_files import Parsed, check_repeats, parse_catalog, parse_single
from registry.importers.openapi import (
    META_NAMESPACE,
    META_OPERATION,
    META_REMOVED,
    Selection,
    check_target,
    parse_openapi,
)
from registry.importers.report import ImportReport
from registry.importers.source import Document, Problem, SourceError, load_documents
from registry.importers.specs import MISSING, ServerSpec, ToolSpec
from registry.models import MCPServer, Tool
from registry.models.tools import ToolType
from registry.services import mcp as mcp_services
from registry.services import tools as tool_services
from registry.services.catalog import tool_upsert
from toolhub.exceptions import ToolHubError

FORMATS = ("auto", "openapi")


def detect_format(documents: list[Document]) -> str | None:
    """``tools``, ``single``, ``openapi`` or ``None`` when nothing fits."""
    first = documents[0].data
    if len(documents) == 1 and isinstance(first, dict):
        if "openapi" in first or "swagger" in first:
            return "openapi"
        if "tools" in first or "mcp_servers" in first:
            return "tools"
    if all(isinstance(d.data, dict) and d.data.get("type") == "tool" for d in documents):
        return "single"
    return None


def import_content(
    text: str,
    *,
    actor,
    fmt: str = "auto",
    dry_run: bool = False,
    base_url: str | None = None,
    namespace: str | None = None,
    tags: list[str] | None = None,
    operations: list[str] | None = None,
    max_tools: int | None = None,
) -> ImportReport:
    """Import ``text`` (YAML or JSON); the report says what was (or would be) done.

    ``tags`` and ``operations`` select OpenAPI operations (``Selection``).
    ``max_tools`` refuses, before anything is written, a document that would
    import more tools than that: the web entry points pass
    ``TOOLHUB_IMPORT_MAX_TOOLS`` so one request cannot hold a web thread for
    minutes; the management commands pass nothing.
    """
    report = ImportReport(dry_run=dry_run)
    try:
        documents = load_documents(text)
    except SourceError as exc:
        report.errors = exc.problems
        return report
    detected = detect_format(documents)
    problem = _format_problem(documents, fmt, detected)
    if problem is not None:
        report.errors.append(problem)
        return report
    select = Selection(tags or (), operations or ())
    if select and detected != "openapi":
        report.errors.append(
            Problem(
                "tags and operations select operations of an OpenAPI document; "
                "this is not one (import the whole file, or split it)",
                "",
                code="invalid",
            )
        )
        return report
    parsed = Parsed()
    if detected == "openapi":
        problems = check_target(base_url, namespace)
        if problems:
            report.format = "openapi"
            report.errors += [
                Problem(f"an OpenAPI import needs {p}", code="required") for p in problems
            ]
            return report
        parse_openapi(documents[0], parsed, base_url=base_url, namespace=namespace, select=select)
    elif detected == "tools":
        parse_catalog(documents[0], parsed)
    else:
        for doc in documents:
            parse_single(doc, parsed)
    check_repeats(parsed)
    if detected == "tools":
        detected = _catalog_format(documents[0])
    _report_parsed(report, detected, parsed, max_tools)
    if report.errors:
        return report
    _write(report, actor, parsed, detected=detected, namespace=namespace, dry_run=dry_run)
    return report


def _format_problem(documents: list[Document], fmt: str, detected: str | None) -> Problem | None:
    """Why the documents cannot be imported as asked, whatever their entries say."""
    if fmt == "openapi" and detected != "openapi":
        return Problem("not an OpenAPI document (no 'openapi' key)", "/openapi")
    if detected is None:
        return Problem(
            "unrecognized file: expected a mapping with 'tools:' or 'mcp_servers:', "
            "single-tool documents with 'type: tool', or an OpenAPI 3 document",
            "",
            documents[0].line(""),
            "unknown_format",
        )
    return None


def _catalog_format(document: Document) -> str:
    """A catalog document's format as reported: what its top-level lists hold."""
    keys = set(document.data)
    detected = "tools" if "tools" in keys else "mcp"
    if {"tools", "mcp_servers"} <= keys:
        detected = "tools+mcp"
    return detected


def _report_parsed(
    report: ImportReport, detected: str, parsed: Parsed, max_tools: int | None
) -> None:
    """What reading found, in the report: format, unknown keys, warnings and errors."""
    report.format = detected
    report.unknown_keys = parsed.unknown
    # A shared path parameter, say, is met once per operation: say it once.
    report.warnings = list({(p.path, p.message): p for p in parsed.warnings}.values())
    report.errors = parsed.errors
    if parsed.unselected:
        report.warnings.append(
            Problem(
                f"{len(parsed.unselected)} operation(s) not selected: not imported, "
                "and tools already imported for them are left as they are",
                "/paths",
                code="not_selected",
            )
        )
    wanted = len(parsed.tools) + len(parsed.servers)
    if max_tools is not None and wanted > max_tools and not report.errors:
        report.errors.append(
            Problem(
                f"the document would import {wanted} tools and servers; an import through "
                f"the API or the admin takes at most {max_tools} (TOOLHUB_IMPORT_MAX_TOOLS). "
                "Select OpenAPI operations with tags or operations, split the file, or run "
                "manage.py import_openapi / import_tools, which has no limit",
                "",
                code="too_many_tools",
            )
        )


def _write(
    report: ImportReport, actor, parsed: Parsed, *, detected: str, namespace, dry_run: bool
) -> None:
    """Apply every spec in one transaction, rolled back on any error or a dry run."""
    with transaction.atomic():
        for server in parsed.servers:
            _guard(report, server.document, server.path, _apply_server, report, actor, server)
        if detected == "openapi":
            _apply_openapi(report, actor, parsed.tools, namespace, parsed.unselected)
        else:
            for spec in parsed.tools:
                _guard(report, spec.document, spec.path, _apply_tool, report, actor, spec)
        if report.errors or dry_run:
            transaction.set_rollback(True)
        else:
            report.written = True


def _guard(report: ImportReport, doc: Document, path: str, func, *args, **kwargs) -> Any:
    """Run one write; a domain error becomes a report error pointing at the entry."""
    try:
        with transaction.atomic():
            return func(*args, **kwargs)
    except ToolHubError as exc:
        report.errors.append(_service_problem(doc, path, exc))
    except _EntryError as exc:
        report.errors.append(doc.problem(f"{path}{exc.key}", exc.message))
    return None


class _EntryError(Exception):
    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key
        self.message = message


def _service_problem(doc: Document, path: str, exc: ToolHubError) -> Problem:
    details = exc.details if isinstance(exc.details, list) else []
    where = path
    fields = [d.get("field") for d in details if isinstance(d, dict) and d.get("field")]
    if len(fields) == 1 and f"{path}/{fields[0]}" in doc.lines:
        where = f"{path}/{fields[0]}"
    return doc.problem(where, exc.message, exc.code)


# --------------------------------------------------------------------------- servers


def _apply_server(report: ImportReport, actor, spec: ServerSpec) -> None:
    server = MCPServer.objects.filter(name=spec.name).first()
    kwargs = {} if spec.auth_token is MISSING else {"auth_token": spec.auth_token}
    fields = dict(spec.fields)
    if isinstance(fields.get("env"), dict):
        # An export masks the values: the mask keeps a stored value; with none stored,
        # the variable is left out and reported (like a secret config without a value).
        stored = server.stored_env() if server is not None else {}
        for name, value in list(fields["env"].items()):
            if value == crypto.MASK and name not in stored:
                del fields["env"][name]
                report.warnings.append(
                    spec.document.problem(
                        f"{spec.path}/env/{name}",
                        f"MCP server {spec.name}: the value of {name} is not in the file; "
                        "set it in the admin or API",
                        "secret_config",
                    )
                )
    if server is None:
        server = mcp_services.mcp_server_create(actor=actor, name=spec.name, **fields, **kwargs)
        report.add("mcp_server", spec.name, "created")
    else:
        _update_server(report, actor, server, fields, kwargs)
    if spec.needs_token and not MCPServer.objects.get(pk=server.pk).has_auth_token:
        report.warnings.append(
            spec.document.problem(
                f"{spec.path}/auth",
                f"MCP server {spec.name} needs a bearer token: set it in the admin or API",
                "secret_config",
            )
        )


def _update_server(report: ImportReport, actor, server: MCPServer, fields: dict, kwargs):
    before = mcp_services.mcp_server_snapshot(server)
    had_token, had_env = server.encrypted_auth_token, server.encrypted_env
    updated = mcp_services.mcp_server_update(actor=actor, server=server, data=fields, **kwargs)
    after = mcp_services.mcp_server_snapshot(updated)
    changes = [f"{k} changed" for k in after if after[k] != before[k] and k != "auth_token"]
    if updated.encrypted_auth_token != had_token:
        changes.append("auth token changed")
    if updated.encrypted_env != had_env and "env changed" not in changes:
        changes.append("env changed")
    report.add("mcp_server", server.name, "updated" if changes else "unchanged", changes)


# --------------------------------------------------------------------------- tools


def _upsert(report: ImportReport, actor, spec: ToolSpec, *, tool: Tool | None = None, name=None):
    fields = dict(spec.fields)
    allow_parallel = fields.pop("_allow_parallel", False)
    existing = tool or Tool.objects.filter(name=name or spec.name).first()
    if allow_parallel and existing is not None and existing.max_concurrency == 1:
        fields["max_concurrency"] = None
    result = tool_upsert(
        actor=actor,
        name=name or spec.name,
        type=spec.type,
        tool=existing,
        default_type=spec.default_type,
        fields=fields,
        metadata=spec.metadata,
        parameters=spec.parameters,
        output_parameters=spec.output_parameters,
        configs=spec.configs,
        secret_configs=spec.secret_configs,
    )
    report.add("tool", result.tool.name, result.action, result.changes)
    for message in result.warnings:
        report.warnings.append(spec.document.problem(spec.path, message, "secret_config"))
    return result


def _apply_tool(report: ImportReport, actor, spec: ToolSpec) -> None:
    if spec.mcp_server:
        server = MCPServer.objects.filter(name=spec.mcp_server).first()
        if server is None:
            raise _EntryError(
                "/mcp_server",
                f"unknown MCP server '{spec.mcp_server}': define it under mcp_servers or create it first",
            )
        prefix = f"{server.name}__"
        remote = spec.remote_tool_name or spec.name.removeprefix(prefix)
        spec.configs = {
            **(spec.configs or {}),
            "server_id": str(server.pk),
            "remote_tool_name": remote,
        }
        spec.metadata = {
            **(spec.metadata or {}),
            mcp_services.META_SERVER: server.name,
            mcp_services.META_SERVER_ID: str(server.pk),
            mcp_services.META_REMOTE_NAME: remote,
        }
        if spec.type is None:
            spec.type = ToolType.MCP
    _upsert(report, actor, spec)


def _apply_openapi(
    report: ImportReport, actor, specs: list[ToolSpec], namespace: str, unselected: set[str]
) -> None:
    mine = {
        (t.tool_metadata or {}).get(META_OPERATION): t
        for t in Tool.objects.filter(**{f"tool_metadata__{META_NAMESPACE}": namespace})
    }
    used: set[str] = set()
    for spec in specs:
        tool = mine.get(spec.operation)

        def taken(candidate: str, tool=tool) -> bool:
            clash = Tool.objects.filter(name=candidate)
            if tool is not None:
                clash = clash.exclude(pk=tool.pk)
            return candidate in used or clash.exists()

        name = naming.unique(spec.name, taken)
        used.add(name)
        if tool is not None and (tool.tool_metadata or {}).get(META_REMOVED):
            spec.fields["is_active"] = True
            spec.metadata = {**(spec.metadata or {}), META_REMOVED: None}
        _guard(report, spec.document, spec.path, _upsert, report, actor, spec, tool=tool, name=name)
    wanted = {spec.operation for spec in specs}
    for operation, tool in mine.items():
        if operation in wanted or operation in unselected or not tool.is_active:
            continue
        meta = {**(tool.tool_metadata or {}), META_REMOVED: True}
        tool_services.tool_update(
            actor=actor, tool=tool, data={"is_active": False, "tool_metadata": meta}
        )
        report.add("tool", tool.name, "deactivated", [f"operation {operation} left the spec"])
