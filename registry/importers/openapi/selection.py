"""Selecting operations to import: by tag, operation id or ``METHOD /path``."""

from __future__ import annotations


def operation_key(method: str, path: str) -> str:
    """How a tool remembers its operation within its namespace: ``GET /users/{id}``."""
    return f"{method.upper()} {path}"


class Selection:
    """Which operations to import: those with any of ``tags``, or named in ``operations``.

    An operation is named by its operationId or by ``METHOD /path`` (``GET /users/{id}``).
    """

    def __init__(self, tags=(), operations=()):
        self.tags = [t for t in tags if t]
        self.operations = [o for o in operations if o]
        self.matched_tags: set[str] = set()
        self.matched_operations: set[str] = set()

    def __bool__(self) -> bool:
        return bool(self.tags or self.operations)

    def picks(self, method: str, path: str, operation: dict) -> bool:
        names = {operation_key(method, path)}
        if isinstance(operation.get("operationId"), str):
            names.add(operation["operationId"])
        tags = operation.get("tags")
        tags = {t for t in tags if isinstance(t, str)} if isinstance(tags, list) else set()
        tag_hits = tags.intersection(self.tags)
        operation_hits = names.intersection(self.operations)
        self.matched_tags |= tag_hits
        self.matched_operations |= operation_hits
        return bool(tag_hits or operation_hits)

    def unmatched(self) -> list[str]:
        return [f"tag '{t}'" for t in self.tags if t not in self.matched_tags] + [
            f"operation '{o}'" for o in self.operations if o not in self.matched_operations
        ]
