"""JSON as JSON defines it: Python's ``json`` also reads ``NaN``, ``Infinity`` and
number literals beyond a float's range (``1e999`` becomes infinity), which no JSON
column stores and no client of ours can read back. Used for request bodies
(``toolhub/api/parsers.py``) and for arguments given as JSON text
(``executions/validation/``).

An object naming a key twice is refused too: parsers disagree on which value
wins (Python takes the last), so a proxy or a filter in front of ToolHub could
read another request than ToolHub does.

So is an unpaired surrogate written as an escape (``"\\udfff"``): it is not
text (UTF-8 cannot encode it; I-JSON, RFC 7493, forbids it), and saved anyway
it breaks every later use of the value (``toolhub.text``)."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from toolhub import text as text_rules


class NotJSONNumber(ValueError):
    """A number JSON cannot carry: ``NaN``, ``Infinity`` or a literal beyond a float's range."""


class DuplicateKey(ValueError):
    """An object names the same key twice."""


class UnencodableText(ValueError):
    """A string or a key holds an unpaired surrogate. ``path``: where (``a.b[0]``)."""

    def __init__(self, path: str):
        where = f" at {path}" if path else ""
        super().__init__(f"the text{where} holds an unpaired surrogate, which UTF-8 cannot encode")
        self.path = path


# Only text holding such an escape (or a raw surrogate) is walked.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")

# Python's own cap on the digits of an integer read from text (sys.int_info).
MAX_INT_DIGITS = 4300


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


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise NotJSONNumber(
            f"an integer of {digits} digits is too long (at most {MAX_INT_DIGITS} digits)"
        )
    return int(text)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        shown = twice if len(twice) <= 60 else twice[:57] + "..."
        raise DuplicateKey(f"the key {json.dumps(shown)} appears twice in one object")
    return obj


def loads(text: str) -> Any:
    """``json.loads`` refusing what JSON has no place for: ``NaN``, ``Infinity``, ``1e999``,
    integers too long to read, objects that name a key twice, and unpaired surrogates.

    Raises ``ValueError`` (``NotJSONNumber``, ``DuplicateKey``, ``UnencodableText``) or
    ``RecursionError``.
    """
    value = json.loads(
        text,
        parse_constant=_refuse_constant,
        parse_float=_finite_float,
        parse_int=_bounded_int,
        object_pairs_hook=_unique_keys,
    )
    if _SURROGATE_ESCAPE.search(text) or not text_rules.is_encodable_text(text):
        where = text_rules.unstorable_path(value, ok=text_rules.is_encodable_text)
        if where is not None:
            raise UnencodableText(where)
    return value


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
