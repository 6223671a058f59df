"""The process-wide registry of Python tools, and its @tool decorator."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from executions.python_tools.registry.errors import ToolDefinitionError
from executions.python_tools.registry.tools import RegisteredTool, build_tool


class ToolRegistry:
    """Registered Python tools by name (thread-safe)."""

    def __init__(self) -> None:
        self._tools: dict[str, RegisteredTool] = {}
        self._lock = threading.Lock()

    def register(self, entry: RegisteredTool) -> RegisteredTool:
        with self._lock:
            existing = self._tools.get(entry.name)
            if existing is not None and _origin(existing.function) != _origin(entry.function):
                raise ToolDefinitionError(
                    f"a Python tool named {entry.name!r} is already registered "
                    f"({_origin(existing.function)})"
                )
            self._tools[entry.name] = entry  # same function re-imported/reloaded: replace
        return entry

    def tool(
        self,
        function: Callable[..., Any] | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        category: str | None = None,
        version: str = "1.0.0",
        **metadata: Any,
    ) -> Any:
        """Decorator registering a function; usable bare (``@tool``) or called (``@tool(...)``)."""
        meta: dict[str, Any] = {"version": version}
        if category is not None:
            meta["category"] = category
        meta.update(metadata)

        def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
            entry = build_tool(func, name=name, description=description, metadata=meta)
            self.register(entry)
            try:
                func.__toolhub_tool__ = entry  # type: ignore[attr-defined]
            except (AttributeError, TypeError):
                pass
            return func

        if function is not None:
            return decorate(function)
        return decorate

    def get(self, name: str) -> RegisteredTool | None:
        return self._tools.get(name)

    def unregister(self, name: str) -> RegisteredTool | None:
        with self._lock:
            return self._tools.pop(name, None)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def all(self) -> list[RegisteredTool]:
        return [self._tools[n] for n in self.names()]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[RegisteredTool]:
        return iter(self.all())

    def __len__(self) -> int:
        return len(self._tools)


def _origin(function: Callable[..., Any]) -> str:
    module = getattr(function, "__module__", "?")
    qualname = getattr(function, "__qualname__", repr(function))
    return f"{module}.{qualname}"


registry = ToolRegistry()
tool = registry.tool
