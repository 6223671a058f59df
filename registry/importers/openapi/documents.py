"""An OpenAPI document: its check, its paths, and the import target."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from registry.importers import naming
from registry.importers.catalog_files import Parsed
from registry.importers.openapi.operation_context import OperationContext
from registry.importers.openapi.operations import _translate_operation
from registry.importers.openapi.selection import Selection, operation_key
from registry.importers.source import Document, Problem, pointer
from registry.models.mcp import MCP_SERVER_NAME_PATTERN

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def check_target(base_url: Any, namespace: Any) -> list[str]:
    problems = []
    try:
        parts = urlsplit(base_url) if isinstance(base_url, str) else None
        host = parts.hostname if parts else None
    except ValueError:  # e.g. an unclosed IPv6 bracket
        parts = host = None
    if not parts or parts.scheme not in ("http", "https") or not host:
        problems.append("base_url: give an absolute http(s) URL")
    elif "@" in parts.netloc:
        # The base URL is stored as a plain (non-secret) config that reviewers can read.
        problems.append(
            "base_url: give a URL without credentials (user:password@); "
            "keep credentials in a secret config, such as an auth config"
        )
    if not isinstance(namespace, str) or not re.match(MCP_SERVER_NAME_PATTERN, namespace):
        problems.append("namespace: use 1 to 40 characters: letters, digits, '_' or '-'")
    return problems


def _document_problem(doc: Document) -> Problem | None:
    """Why the document is not an OpenAPI 3 document with paths, if it is not."""
    data = doc.data
    if not isinstance(data, dict):
        return doc.problem("", "an OpenAPI document must be a mapping")
    if "swagger" in data:
        return doc.problem("/swagger", "Swagger 2.0 is not supported: convert it to OpenAPI 3")
    version = data.get("openapi")
    if not isinstance(version, str) or not version.startswith("3."):
        return doc.problem("/openapi", "must be an OpenAPI 3.x version string")
    if not isinstance(data.get("paths"), dict):
        return doc.problem("/paths", "must be a mapping of paths to operations")
    return None


def parse_openapi(
    doc: Document,
    parsed: Parsed,
    *,
    base_url: str,
    namespace: str,
    select: Selection | None = None,
) -> None:
    problem = _document_problem(doc)
    if problem is not None:
        parsed.errors.append(problem)
        return
    used: set[str] = set()
    for path, item in doc.data["paths"].items():
        _parse_path_item(
            doc, parsed, path, item, used, base_url=base_url, namespace=namespace, select=select
        )
    if select:
        for missing in select.unmatched():
            parsed.errors.append(
                doc.problem(
                    "/paths",
                    f"no operation in the document matches the selected {missing}",
                    "not_found",
                )
            )


def _parse_path_item(
    doc: Document,
    parsed: Parsed,
    path: str,
    item: Any,
    used: set[str],
    *,
    base_url: str,
    namespace: str,
    select: Selection | None,
) -> None:
    """The tools of one path's operations, appended to ``parsed.tools`` with unique names."""
    item_path = pointer("paths", path)
    if not path.startswith("/"):
        parsed.errors.append(doc.problem(item_path, "a path must start with '/'"))
        return
    op = OperationContext(doc, parsed, item_path)
    item = op.deref(item, item_path)
    if not isinstance(item, dict):
        if not op.failed:
            op.error(item_path, "must be a mapping of methods to operations")
        return
    for method in METHODS:
        operation = item.get(method)
        if operation is None:
            continue
        where = f"{item_path}/{method}"
        if not isinstance(operation, dict):
            parsed.errors.append(doc.problem(where, "an operation must be a mapping"))
            continue
        if select and not select.picks(method, path, operation):
            parsed.unselected.add(operation_key(method, path))
            continue
        spec = _translate_operation(
            OperationContext(doc, parsed, where),
            path=path,
            method=method,
            operation=operation,
            shared=item.get("parameters") or [],
            base_url=base_url,
            namespace=namespace,
        )
        if spec is None:
            continue
        spec.name = naming.unique(spec.name, lambda n: n in used)
        used.add(spec.name)
        parsed.tools.append(spec)
