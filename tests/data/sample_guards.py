"""An operator's module of guard functions (and a Python tool to guard), as
TOOLHUB_GUARD_MODULES and TOOLHUB_PYTHON_TOOL_MODULES would name it."""

from __future__ import annotations

import re

from executions.guards import Finding, Violation, guard, texts
from executions.python_tools import tool

CODEWORD = re.compile(r"swordfish", re.IGNORECASE)


@guard(stage="before")
def sample_no_system_paths(arguments, context):
    """Refuse paths under /etc (a message the model can act on)."""
    path = str(arguments.get("path", ""))
    if path.startswith("etc") or path.startswith("/etc"):
        return Violation(
            "Paths under /etc are not allowed: ask for a file in /srv.", {"arg": "path"}
        )
    return None


@guard(stage="after")
def sample_codewords(output, context):
    """Find the operator's codeword wherever it appears."""
    label = context.options.get("label", "codeword")
    return [
        Finding(label, match.start(), match.end(), path)
        for path, text in texts(output)
        for match in CODEWORD.finditer(text)
    ]


@guard(stage="before")
def sample_broken_before(arguments, context):
    raise RuntimeError(f"cannot decide on {arguments}")


@guard(stage="after")
def sample_broken_after(output, context):
    raise RuntimeError(f"cannot read {output}")


@tool(category="text", safety="safe", speed="fast")
def sample_say(text: str) -> str:
    """Return the text as it was given.

    Args:
        text: What to say.
    """
    return text
