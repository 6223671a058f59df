"""A Google-style docstring read: the summary and each parameter's description."""

from __future__ import annotations

import inspect
import re

_ARGS_HEADER = re.compile(r"^(Args|Arguments|Parameters|Params)\s*:\s*$")
_ARG_LINE = re.compile(r"^\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Return (first paragraph, {parameter: description}) from a Google-style docstring."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    return _summary(lines), _arg_descriptions(lines)


def _summary(lines: list[str]) -> str:
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _ARGS_HEADER.match(line.strip()):
            break
        summary.append(line.strip())
    return " ".join(summary)


class _ArgsSection:
    """An ``Args:`` section being read: entries at one indent, continuation lines deeper."""

    def __init__(self, header_indent: int) -> None:
        self.header_indent = header_indent
        self.entry_indent: int | None = None
        self.current: str | None = None

    def read(self, stripped: str, indent: int, descriptions: dict[str, str]) -> None:
        if self.entry_indent is None:
            self.entry_indent = indent
        match = _ARG_LINE.match(stripped)
        if indent <= self.entry_indent and match:
            self.current = match.group(1)
            descriptions[self.current] = match.group(3).strip()
        elif self.current is not None:  # a continuation line
            descriptions[self.current] = f"{descriptions[self.current]} {stripped}".strip()


def _arg_descriptions(lines: list[str]) -> dict[str, str]:
    descriptions: dict[str, str] = {}
    section: _ArgsSection | None = None
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if section is None or (stripped and indent <= section.header_indent):
            # Outside the section, or the next one ("Returns:", "Raises:") or prose.
            section = _ArgsSection(indent) if _ARGS_HEADER.match(stripped) else None
            continue
        if stripped:
            section.read(stripped, indent, descriptions)
    return descriptions
