"""What guard functions are given and what they answer (the operators' interface too)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Violation:
    """A before-guard's answer when the arguments break its rule.

    ``message`` goes to the agent (say what to change, never quote a secret);
    ``details`` are recorded with the decision (names and places, never values).
    """

    message: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GuardContext:
    """What a guard function knows about the call besides the arguments or output.

    ``options``: the guard row's ``config["options"]`` (operator guards), or its
    whole config (built-in guards).
    """

    tool_name: str
    tool_type: str
    caller: str
    stage: str
    guard_name: str = ""
    options: dict[str, Any] = field(default_factory=dict)
