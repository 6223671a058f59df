"""What reading catalog documents gives: specs and the problems met on the way."""

from __future__ import annotations

from registry.importers.source import Problem
from registry.importers.specs import (
    ServerSpec,
    ToolSpec,
)


class Parsed:
    """Specs read from documents, with the problems met on the way."""

    def __init__(self) -> None:
        self.servers: list[ServerSpec] = []
        self.tools: list[ToolSpec] = []
        self.errors: list[Problem] = []
        self.warnings: list[Problem] = []
        self.unknown: list[Problem] = []
        # OpenAPI: operations ("GET /path") present but left out by a selection.
        self.unselected: set[str] = set()
