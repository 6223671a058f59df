"""One operation being translated: its problems, and ``$ref``s followed or inlined."""

from __future__ import annotations

from typing import Any

from registry.importers.catalog_files import Parsed
from registry.importers.source import Document
from registry.schema_rows import (
    SchemaProblem,
    json_pointer_get,
    resolve_refs,
)


class OperationContext:
    def __init__(self, doc: Document, parsed: Parsed, path: str):
        self.doc = doc
        self.parsed = parsed
        self.path = path
        self.failed = False

    def error(self, where: str, message: str) -> None:
        self.failed = True
        self.parsed.errors.append(self.doc.problem(where, message))

    def warn(self, where: str, message: str) -> None:
        self.parsed.warnings.append(self.doc.problem(where, message, "openapi"))

    def deref(self, node: Any, where: str) -> Any:
        """Follow a ``$ref`` at the top of ``node`` only (path items, parameters, bodies)."""
        for _ in range(20):
            if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
                return node
            ref = node["$ref"]
            if not ref.startswith("#"):
                self.error(where, f"remote $ref {ref!r} is not supported")
                return None
            try:
                node = json_pointer_get(self.doc.data, ref)
            except KeyError:
                self.error(where, f"$ref {ref!r} points nowhere")
                return None
        self.error(where, "$ref chain too long")
        return None

    def resolve(self, node: Any, where: str) -> Any:
        """``node`` with every local ``$ref`` inside it inlined (for schemas)."""
        notes: list[str] = []
        try:
            resolved = resolve_refs(node, self.doc.data, notes, where=where)
        except SchemaProblem as exc:
            self.error(exc.path, exc.message)
            return None
        for note in notes:
            self.warn(where, note)
        return resolved
