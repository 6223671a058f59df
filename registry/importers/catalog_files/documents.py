"""Whole catalog documents: their lists of entries, and names defined twice."""

from __future__ import annotations

from registry.importers.catalog_files.parsed import Parsed
from registry.importers.catalog_files.server_entries import parse_server
from registry.importers.catalog_files.tool_entries import parse_tool
from registry.importers.source import Document
from registry.importers.specs import (
    MISSING,
    Entry,
)

# --------------------------------------------------------------------------- documents


def parse_catalog(doc: Document, parsed: Parsed) -> None:
    """A mapping with ``tools:`` and/or ``mcp_servers:`` lists."""
    top = Entry(doc, "", doc.data, parsed.errors, parsed.unknown)
    top.report_unknown({"tools", "mcp_servers", "version"})
    for key in ("mcp_servers", "tools"):
        items = top.any(key)
        if items is MISSING or items is None:
            continue
        if not isinstance(items, list):
            top.error(key, "must be a list of entries (each starting with '- ')")
            continue
        for index, item in enumerate(items):
            entry = Entry(doc, f"/{key}/{index}", item, parsed.errors, parsed.unknown)
            if key == "tools":
                spec = parse_tool(entry, parsed, single=False)
                if spec:
                    parsed.tools.append(spec)
            else:
                server = parse_server(entry, parsed)
                if server:
                    parsed.servers.append(server)


def parse_single(doc: Document, parsed: Parsed) -> None:
    entry = Entry(doc, "", doc.data, parsed.errors, parsed.unknown)
    spec = parse_tool(entry, parsed, single=True)
    if spec:
        parsed.tools.append(spec)


def check_repeats(parsed: Parsed) -> None:
    """A name defined twice in one import is an error (which one should win?)."""
    for items, label in ((parsed.tools, "tool"), (parsed.servers, "MCP server")):
        seen: dict[str, str] = {}
        for spec in items:
            if spec.name in seen:
                parsed.errors.append(
                    spec.document.problem(
                        f"{spec.path}/name",
                        f"{label} '{spec.name}' is already defined at {seen[spec.name]}",
                        "duplicate",
                    )
                )
            else:
                line = spec.document.line(spec.path)
                where = spec.document.base + spec.path or "/"
                seen[spec.name] = f"line {line} ({where})" if line else where
