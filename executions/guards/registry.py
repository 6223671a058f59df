"""Operators' guard functions: ``@guard`` registers one in the process-wide registry.

Like operators' Python tools, the code comes from modules the operator lists
(``TOOLHUB_GUARD_MODULES``, imported by every process at start), never from
the database: a guard row of kind ``python`` only names a registered function.

A before-function takes ``(arguments, context)`` and returns ``None`` (allow),
a ``Violation`` or a message string (the guard's action then applies: deny or
require approval). An after-function takes ``(output, context)`` and returns
the ``Finding``s it made (empty: pass); the guard's action redacts them, blocks
the output or flags the result. Whatever a function raises denies the call
(before) or blocks the output (after): guards fail closed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

STAGES = ("before", "after")


class GuardDefinitionError(ValueError):
    """A guard function that cannot be registered (bad name or stage, name taken)."""


@dataclass(frozen=True)
class GuardFunction:
    name: str
    stage: str
    function: Callable[..., Any]


class GuardRegistry:
    """Registered guard functions by name (thread-safe)."""

    def __init__(self) -> None:
        self._functions: dict[str, GuardFunction] = {}
        self._lock = threading.Lock()

    def register(self, name: str, stage: str, function: Callable[..., Any]) -> GuardFunction:
        if stage not in STAGES:
            raise GuardDefinitionError(f"guard {name!r}: stage must be 'before' or 'after'")
        if not name or len(name) > 200:
            raise GuardDefinitionError("a guard function needs a name of 1 to 200 characters")
        entry = GuardFunction(name, stage, function)
        with self._lock:
            existing = self._functions.get(name)
            if existing is not None and _origin(existing.function) != _origin(function):
                raise GuardDefinitionError(
                    f"a guard function named {name!r} is already registered "
                    f"({_origin(existing.function)})"
                )
            self._functions[name] = entry
        return entry

    def guard(self, *, stage: str, name: str | None = None) -> Callable:
        """Decorator: ``@guard(stage="after")`` registers the function under its name."""

        def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
            self.register(name or function.__name__, stage, function)
            return function

        return decorate

    def get(self, name: str) -> GuardFunction | None:
        return self._functions.get(name)

    def unregister(self, name: str) -> None:
        with self._lock:
            self._functions.pop(name, None)

    def stages(self) -> dict[str, str]:
        """Each registered name with its stage (``registry.guard_configs`` checks rows by it)."""
        return {name: entry.stage for name, entry in self._functions.items()}


def _origin(function: Callable[..., Any]) -> str:
    module = getattr(function, "__module__", "?")
    return f"{module}.{getattr(function, '__qualname__', repr(function))}"


registry = GuardRegistry()
guard = registry.guard
