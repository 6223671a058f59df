"""Keeping the values given for secret parameters out of a refused call's answer and record.

Neither the answer nor the record of a refusal holds a value given for a secret
parameter (``problems_without_secrets``), nor that value given again under
another key or inside another argument, in any form ``secret_forms`` knows
(``without_secret_values``); arguments text that does not parse is not kept
for a tool with secret parameters (``RAW_INPUT_NOT_KEPT``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from executions.jsonsafe import storable_text
from executions.redaction import REDACTED, with_encoded_forms

# What a refused call's row holds instead of arguments text that did not parse
# (or was no object) when the tool has secret parameters: no part of broken text
# can be told to be or not to be a secret, so none of it is kept.
RAW_INPUT_NOT_KEPT = "[not kept: the tool has secret parameters]"
VALUE_NOT_SHOWN = "value not shown: secret parameter"
# Shorter forms of a secret value are not looked for in messages: they would
# hide ordinary words and numbers (as in executions.redaction).
_MIN_FORM_LENGTH = 4
# Strings and numbers inside a secret value whose own forms are looked for,
# besides the whole value's: any real secret has fewer; any call costs little.
_MAX_SECRET_SCALARS = 256
# Marks secret text in place while redacting (NUL never survives storable_text).
_MASK = "\x00"
_MASKED = re.compile("\x00+")


def _named(path: str, names: Iterable[str]) -> str | None:
    """The argument in ``names`` a problem's ``path`` is at or below, if any."""
    for name in names:
        if path == name or path.startswith((f"{name}.", f"{name}[")):
            return name
    return None


def problems_without_secrets(
    problems: list[dict], arguments: Any, secret_names: Iterable[str]
) -> tuple[list[dict], list[str]]:
    """``problems`` with no trace of the values given for secret parameters, and
    the text forms of those values (``secret_forms``) no record may hold either.

    A problem at (or below) a secret parameter that was given a value names the
    parameter and what it expects, never the value nor a path into it: only what
    the tool's schema says. Any other problem (below another argument, about the
    arguments as a whole, a missing argument) has every form of the secret
    values redacted: another argument may repeat a secret.
    """
    arguments = arguments if isinstance(arguments, dict) else {}
    given = {k: v for k, v in arguments.items() if k in secret_names}
    described: list[tuple[str, dict]] = []
    merged: set[tuple[str, str]] = set()
    for problem in problems:
        path = str(problem.get("path", ""))
        name = _named(path, given)
        if name is None:
            described.append(("other", problem))
            continue
        expected = str(problem.get("expected") or "a valid value")
        if (name, expected) in merged:  # problems below one secret parameter merge
            continue
        merged.add((name, expected))
        message = f"Expected {expected} ({VALUE_NOT_SHOWN})."
        described.append(("secret", {"path": name, "message": message, "expected": expected}))
    # Text built from the schema alone (names, expectations, fixed wording) is
    # known to every caller: a value found inside it reveals nothing there, and
    # redacting it would only garble the parameter's name.
    public = "\n".join(text for kind, p in described if kind == "secret" for text in p.values())
    forms = [form for form in secret_forms(given.values()) if form not in public]
    cleaned: list[dict] = []
    for kind, problem in described:
        if kind == "other" and forms:
            problem = {
                key: without_secrets(text, forms) if isinstance(text, str) else text
                for key, text in problem.items()
            }
        cleaned.append(problem)
    return cleaned, forms


def secret_forms(values: Iterable[Any]) -> list[str]:
    """Every text form a message could quote the secret ``values`` in, longest first:
    each value's ``str``, ``repr`` and JSON, the same for the strings and numbers
    inside it (the first ``_MAX_SECRET_SCALARS``), as given and as a record
    stores text, and the encoded forms redaction looks for in outputs
    (``with_encoded_forms``: URL-encoded, base64, re-cased) of each string and
    number. Keys inside a value are in the value's own forms; alone they
    are names, too often ordinary words. Forms shorter than
    ``_MIN_FORM_LENGTH`` are left out."""
    values = list(values)
    forms: set[str] = set()
    for part in [*values, *_scalars(values, _MAX_SECRET_SCALARS)]:
        if part is None or isinstance(part, bool):
            continue  # nothing secret in true, false or null
        if isinstance(part, str | int | float):
            forms.update(storable_text(f) for f in with_encoded_forms([str(part)]))
        for render in (str, repr, json.dumps, _json_unescaped):
            try:
                text = render(part)
            except (TypeError, ValueError, RecursionError):
                continue
            forms.update((text, storable_text(text)))
    return sorted((f for f in forms if len(f) >= _MIN_FORM_LENGTH), key=len, reverse=True)


def _json_unescaped(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _scalars(values: list[Any], limit: int) -> list[Any]:
    """Up to ``limit`` strings and numbers inside the containers ``values`` (no recursion)."""
    found: list[Any] = []
    stack = [v for v in reversed(values) if isinstance(v, dict | list | tuple)]
    seen: set[int] = set()
    while stack and len(found) < limit:
        item = stack.pop()
        if isinstance(item, dict | list | tuple):
            if id(item) not in seen:
                seen.add(id(item))
                children = list(item.values() if isinstance(item, dict) else item)
                stack.extend(reversed(children))
        else:
            found.append(item)
    return found


def without_secrets(text: str, forms: list[str], limit: int | None = None) -> str:
    """``text``, cut to ``limit`` characters, with each of ``forms`` replaced by
    ``REDACTED`` (longest first: no part of a longer form is left over).

    Occurrences are masked in place before the cut, so no position moves: a
    form cut through at the end is cut away whole, never left as a prefix.
    """
    text = storable_text(text)
    if limit is not None:
        text = text[: limit + max((len(f) for f in forms), default=0)]
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, _MASK * len(form))
    if limit is not None:
        text = text[:limit]
    return _MASKED.sub(REDACTED, text) if forms else text


def without_secret_values(value: Any, forms: list[str]) -> Any:
    """``value`` (plain JSON) with ``forms`` redacted from every string and key, at any
    depth; a number whose text holds one becomes the redacted text."""
    if not forms:
        return value
    if isinstance(value, str):
        return without_secrets(value, forms)
    if isinstance(value, int | float) and not isinstance(value, bool):
        text = str(value)
        cleaned = without_secrets(text, forms)
        return value if cleaned == text else cleaned
    if isinstance(value, dict):
        return {
            without_secrets(str(k), forms): without_secret_values(v, forms)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [without_secret_values(v, forms) for v in value]
    return value
