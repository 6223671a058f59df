"""Where something was found in an output, and redacting it there.

A ``Finding`` names a place, never a value: the JSON path of a string in the
output (``$.contacts[0].email``; ``$`` when the output is one text) and the
character offsets within it. Numbers are looked at as their decimal text (a
card number sent as a JSON number, integer or whole float, is still a card number); a finding in one
covers the whole number, which redaction replaces with a string. Dictionary
keys are texts too (an upstream may key its answer by e-mail address or put a
key in a key; ordinary field names, short identifiers, are passed over): a finding in one has a ``KeyOf`` as its last step, redaction
renames the key, and a recorded path shows such a key by its position
(``$.users{key 3}``), never its text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from executions.guards.budget import check_budget


@dataclass(frozen=True)
class KeyOf:
    """A path's last step when the text is a dictionary's key itself (the ``index``-th)."""

    key: str
    index: int


Path = tuple["str | int | KeyOf", ...]
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Finding:
    """Something a guard found: where (``path``, ``start``/``end`` offsets in that text)
    and what (``label``, such as ``email`` or ``jwt``)."""

    label: str
    start: int
    end: int
    path: Path = ()

    def record(self, hidden: frozenset[Path] = frozenset()) -> dict[str, Any]:
        """What a decision keeps of it: the place and the label, never the text found
        (``hidden``: the paths of keys found to hold something, shown by position)."""
        return {
            "path": json_path(self.path, hidden),
            "start": self.start,
            "end": self.end,
            "type": self.label,
        }


def hidden_keys(findings) -> dict[Path, int]:
    """The paths (as values' paths spell them) of the keys ``findings`` found something in,
    with each key's position: a recorded path shows them by position only."""
    return {
        (*f.path[:-1], f.path[-1].key): f.path[-1].index
        for f in findings
        if f.path and isinstance(f.path[-1], KeyOf)
    }


def json_path(path: Path, hidden: dict[Path, int] | frozenset = frozenset()) -> str:
    parts = ["$"]
    for depth, step in enumerate(path):
        if isinstance(step, KeyOf):
            parts.append(f"{{key {step.index}}}")
        elif isinstance(step, str) and path[: depth + 1] in hidden:
            index = hidden[path[: depth + 1]] if isinstance(hidden, dict) else "?"
            parts.append(f"[{{key {index}}}]")
        elif isinstance(step, int):
            parts.append(f"[{step}]")
        elif _PLAIN_KEY.match(step):
            parts.append(f".{step}")
        else:
            parts.append("[" + repr(step).replace("\\'", "'") + "]")
    return "".join(parts)


def _as_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e19:
        return str(int(value))  # 4111111111111111.0: a card number sent as a float
    return None


_ORDINARY_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,14}")


def _ordinary_key(key: str) -> bool:
    """A field name no built-in guard can find anything in (an identifier of at most 15
    characters with fewer than 7 digits: no secret is that short, no number of personal
    data has so few digits, no address lacks its "@"): most keys, not looked at."""
    return bool(_ORDINARY_KEY.fullmatch(key)) and sum(ch.isdigit() for ch in key) < 7


def texts(value: Any) -> Iterator[tuple[Path, str]]:
    """Every string (and integer, as text) in ``value`` with its path, depth first, without
    recursion (an upstream's JSON may be nested deeper than Python's stack)."""
    stack: list[tuple[Path, Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        text = _as_text(item)
        if text is not None:
            check_budget()
            yield path, text
        elif isinstance(item, dict):
            for index, (key, child) in reversed(list(enumerate(item.items()))):
                stack.append(((*path, str(key)), child))
                if not _ordinary_key(str(key)):
                    stack.append(((*path, KeyOf(str(key), index)), str(key)))
        elif isinstance(item, list | tuple):
            stack.extend(
                ((*path, index), child) for index, child in reversed(list(enumerate(item)))
            )


def _merged(findings: list[Finding]) -> list[Finding]:
    """Spans sorted and overlapping ones joined (two guards may find the same text)."""
    merged: list[Finding] = []
    for finding in sorted(findings, key=lambda f: (f.start, -f.end)):
        if merged and finding.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = Finding(last.label, last.start, max(last.end, finding.end), last.path)
        else:
            merged.append(finding)
    return merged


def redact_spans(text: str, findings: list[Finding]) -> str:
    """``text`` with each finding's span replaced by ``[REDACTED:<label>]``."""
    parts, position = [], 0
    for finding in _merged(findings):
        parts.append(text[position : finding.start])
        parts.append(f"[REDACTED:{finding.label}]")
        position = finding.end
    parts.append(text[position:])
    return "".join(parts)


def redacted(value: Any, findings: list[Finding]) -> Any:
    """A copy of ``value`` with every finding redacted in place (``value`` is not changed)."""
    by_path: dict[Path, list[Finding]] = {}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    if () in by_path:
        return redact_spans(_as_text(value) or "", by_path[()])
    root = _copy(value)
    renames: dict[Path, dict[str, str]] = {}
    # Values first, then keys, those of the deepest mappings first: a key renamed
    # earlier would no longer lead to what is under it.
    for path, spans in by_path.items():
        last = path[-1]
        if isinstance(last, KeyOf):
            renames.setdefault(path[:-1], {})[last.key] = redact_spans(last.key, spans)
        else:
            parent = _at(root, path[:-1])
            parent[last] = redact_spans(_as_text(parent[last]) or "", spans)
    for parent_path, names in sorted(renames.items(), key=lambda item: -len(item[0])):
        _rename(_at(root, parent_path), names)
    return root


def _at(root: Any, path: Path) -> Any:
    for step in path:
        root = root[step]
    return root


def _rename(mapping: dict, names: dict[str, str]) -> None:
    """Rename keys in place (``names``: old to new), keeping the order and every key (a
    clash gets a suffix). One pass over the mapping for all its keys, and each new name's
    suffixes counted on from the last one given: a pass per key, and suffixes tried
    from 2 for each key, made a mapping keyed by 40,000 e-mail addresses quadratic."""
    taken = set(mapping) - names.keys()
    suffixes: dict[str, int] = {}  # the last suffix given to each new name
    items = list(mapping.items())
    mapping.clear()
    for key, child in items:
        name = names.get(key, key)
        if key in names:
            base, suffix = name, suffixes.get(name, 1)
            while name in taken:
                suffix += 1
                name = f"{base} #{suffix}"
            suffixes[base] = suffix
            taken.add(name)
        mapping[name] = child


def _copy(value: Any) -> Any:
    """A copy of the containers of ``value`` (lists for tuples), its leaves shared."""
    if not isinstance(value, dict | list | tuple):
        return value
    root: Any = {} if isinstance(value, dict) else []
    stack = [(value, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, child in items:
            if isinstance(child, dict | list | tuple):
                copy: Any = {} if isinstance(child, dict) else []
                stack.append((child, copy))
                child = copy
            if isinstance(target, dict):
                target[key] = child
            else:
                target.append(child)
    return root
