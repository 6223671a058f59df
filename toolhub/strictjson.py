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
