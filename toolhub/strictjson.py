"""JSON as JSON defines it: Python's ``json`` also reads ``NaN``, ``Infinity`` and
number literals beyond a float's range (``1e999`` becomes infinity), which no JSON
column stores and no client of ours can read back. Used for request bodies
(``toolhub/api/parsers.py``) and for arguments given as JSON text
(``executions/validation.py``)."""

from __future__ import annotations

import json
import math
from typing import Any


class NotJSONNumber(ValueError):
    """A number JSON cannot carry: ``NaN``, ``Infinity`` or a literal beyond a float's range."""


def _refuse_constant(name: str):
    raise NotJSONNumber(
        f"{name} is not a JSON value (numbers must be finite; use null or a string instead)"
    )


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise NotJSONNumber(f"the number {shown} is out of range (numbers must be finite)")
    return number


def loads(text: str) -> Any:
    """``json.loads`` refusing what JSON has no place for: ``NaN``, ``Infinity``, ``1e999``.

    Raises ``ValueError`` (``NotJSONNumber`` for those numbers) or ``RecursionError``.
    """
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)


def nested_deeper_than(value: Any, limit: int, *, level: int = 1) -> bool:
    """Whether ``value`` nests objects and arrays (dicts, lists, tuples) more than ``limit``
    levels deep, ``value`` itself being at ``level``. Iterative, so any depth is safe; a
    container inside itself counts as too deep (the walk ends at the limit)."""
    stack = [(value, level)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend(
            (child, depth + 1) for child in children if isinstance(child, dict | list | tuple)
        )
    return False
