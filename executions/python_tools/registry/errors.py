"""The error raised when a function cannot be registered as a tool."""

from __future__ import annotations


class ToolDefinitionError(TypeError):
    """A function cannot be registered as a tool (unsupported hint, bad name…)."""
