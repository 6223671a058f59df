"""Tool names for imported and synced tools: ``<namespace>__<name>``, sanitized, at most 64, unique."""

from __future__ import annotations

import re
from collections.abc import Callable

TOOL_NAME_LIMIT = 64
_INVALID = re.compile(r"[^a-zA-Z0-9_-]")


def clean(text: str, limit: int = TOOL_NAME_LIMIT) -> str:
    """``text`` with every character outside ``[a-zA-Z0-9_-]`` replaced by ``_``, cut to ``limit``."""
    return (_INVALID.sub("_", text or "") or "tool")[:limit]


def namespaced(namespace: str, name: str, limit: int = TOOL_NAME_LIMIT) -> str:
    return clean(f"{namespace}__{name}", limit)


def unique(candidate: str, is_taken: Callable[[str], bool], limit: int = TOOL_NAME_LIMIT) -> str:
    """``candidate`` or, when taken, ``candidate_2``, ``candidate_3``… (cut to stay within ``limit``)."""
    name, n = candidate[:limit], 2
    while is_taken(name):
        suffix = f"_{n}"
        name = candidate[: limit - len(suffix)] + suffix
        n += 1
    return name
