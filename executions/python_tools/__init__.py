"""Python functions as tools: ``@tool`` registers a function in the process-wide ``registry``.

Importing this package also registers the built-in tools (``builtins``).
"""

from executions.python_tools import builtins  # registers the built-in tools
from executions.python_tools.registry import (
    RegisteredTool,
    ToolDefinitionError,
    ToolRegistry,
    registry,
    tool,
)

__all__ = ["RegisteredTool", "ToolDefinitionError", "ToolRegistry", "builtins", "registry", "tool"]
