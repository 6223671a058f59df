"""An operator's module of Python tools, as TOOLHUB_PYTHON_TOOL_MODULES would name it."""

from __future__ import annotations

from executions.python_tools import tool


@tool(category="text", safety="safe", speed="fast")
def sample_shout(text: str, times: int = 1) -> str:
    """Return the text in capitals, repeated.

    Args:
        text: What to shout.
        times: How many times.
    """
    return " ".join([text.upper()] * times)
