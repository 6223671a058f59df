"""Removing secret values from text and structures before anything is stored or logged."""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit

from executions.jsonsafe import CIRCULAR

REDACTED = "[REDACTED]"
_MIN_SECRET_LENGTH = 4  # shorter values would redact ordinary words


_CREDENTIAL_NAME = re.compile(
    r"token|secret|passw|^pwd$|api[-_]?key|apikey|^(x-)?key$|access[-_]?key|signature|^sig$"
    r"|auth|session|cookie|credential",
    re.IGNORECASE,
)


def credential_names(names: Iterable[Any]) -> list[str]:
    """The names among ``names`` that say their value is a credential."""
    return sorted(str(n) for n in names if isinstance(n, str) and _CREDENTIAL_NAME.search(n))


def _usable(secrets: Iterable[str]) -> list[str]:
    values = {str(s) for s in secrets if s is not None and len(str(s)) >= _MIN_SECRET_LENGTH}
    return sorted(values, key=len, reverse=True)  # longest first: no partial leftovers


# Encoded forms are looked for only for secrets at least this long, and re-cased
# ones (and the base64 of a secret inside a longer base64 text, whose encoding
# depends on where it starts) from the longer length: shorter ones would match
# ordinary text once lowercased or cut to the aligned part.
ENCODED_MIN_CHARS = 8
_ALIGNED_MIN_CHARS = 12


def with_encoded_forms(secrets: Iterable[str]) -> list[str]:
    """``secrets`` and the forms an upstream may echo them in: URL-encoded, base64
    (standard and URL-safe, padded or not, and the part of its encoding that is
    the same wherever it starts inside a longer base64 text, as in
    ``Basic base64(user:password)``), and all lower or upper case."""
    forms: set[str] = set()
    for secret in secrets:
        if not secret:
            continue
        secret = str(secret)
        # As bytes: a secret stored before unencodable text was refused still quotes.
        raw = secret.encode("utf-8", "surrogatepass")
        forms.update((secret, quote(raw, safe=""), quote_plus(raw)))
        if len(secret) < ENCODED_MIN_CHARS:
            continue
        long_enough = len(secret) >= _ALIGNED_MIN_CHARS
        if long_enough:
            forms.update((secret.lower(), secret.upper()))
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            whole = encode(raw).decode("ascii")
            forms.update((whole, whole.rstrip("=")))
            if long_enough:
                for skip in range(3):  # the secret starts 0, 2 or 1 bytes into a group
                    part = raw[skip:]
                    part = part[: len(part) - len(part) % 3]
                    forms.add(encode(part).decode("ascii"))
    return sorted(forms, key=len, reverse=True)


def redact_text(text: str, secrets: Iterable[str]) -> str:
    for secret in _usable(secrets):
        text = text.replace(secret, REDACTED)
    return text


def redact(value: Any, secrets: Iterable[str]) -> Any:
    """Return ``value`` with every secret string replaced, at any depth.

    Dicts, lists and tuples (as lists) are copied with their strings and string
    keys redacted; other values are kept as they are. The walk uses no
    recursion, so however deeply nested ``value`` is (an upstream's JSON, say)
    it is redacted whole; a container inside itself becomes ``"[circular]"``.
    """
    usable = _usable(secrets)
    if not usable:
        return value
    return _redact(value, usable)


def _text(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def _entries(value: dict | list | tuple) -> Iterator[tuple[Any, Any]]:
    return iter(value.items()) if isinstance(value, dict) else ((None, v) for v in value)


def _redact(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return _text(value, secrets)
    if not isinstance(value, dict | list | tuple):
        return value
    root: dict | list = {} if isinstance(value, dict) else []
    # Each frame: the source's remaining entries, the copy being filled, the source's id.
    stack = [(_entries(value), root, id(value))]
    open_ids = {id(value)}  # the containers being copied: meeting one again is a cycle
    while stack:
        entries, copy, marker = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            open_ids.discard(marker)
            continue
        key, item = entry
        if isinstance(item, str):
            item = _text(item, secrets)
        elif isinstance(item, dict | list | tuple):
            if id(item) in open_ids:
                item = CIRCULAR
            else:
                child: dict | list = {} if isinstance(item, dict) else []
                stack.append((_entries(item), child, id(item)))
                open_ids.add(id(item))
                item = child
        if isinstance(copy, dict):
            copy[_text(key, secrets) if isinstance(key, str) else key] = item
        else:
            copy.append(item)
    return root


def trim_partial_secrets(text: str, secrets: Iterable[str], *, at_start: bool = False) -> str:
    """``text``, which was cut, without the piece of a secret the cut left at its end (or,
    ``at_start``, at its start): a redaction finds whole secrets, not their pieces.
    ``secrets``: every form looked for (``with_encoded_forms``)."""
    for secret in secrets:
        for k in range(min(len(secret) - 1, len(text)), 0, -1):
            if at_start and text.startswith(secret[-k:]):
                text = text[k:]
                break
            if not at_start and text.endswith(secret[:k]):
                text = text[:-k]
                break
    return text


# Parts of a secret value that are secrets of their own: a response or an error
# may quote one without the rest (an upstream echoing its path and query, a
# database naming the database or an option it refused).
PART_MIN_CHARS = 8
# A path segment is kept out only when it looks like a token (long, letters and
# digits): ordinary segments ("transactions") also appear in ordinary outputs.
_TOKENISH = re.compile(r"^(?=.*[0-9])(?=.*[A-Za-z])[A-Za-z0-9._~+=-]{16,}$")


def secret_parts(value: str) -> list[str]:
    """The pieces of a secret URL or connection string that are secrets on their own:
    the user name and password, the values of credential-named query parameters
    (``?api_key=``), token-like path segments, and a ``key=value`` connection
    string's user and password. Other pieces (formats, modes, database names) are
    ordinary text an output may hold. Pieces shorter than ``PART_MIN_CHARS`` are left out."""
    parts: list[str] = []
    if "://" in value or value.startswith("/"):  # an absolute URL, or a path and query
        try:
            url = urlsplit(value.strip())
            username, password = url.username, url.password
        except ValueError:
            return []
        parts += [username or "", password or ""]
        parts += [seg for seg in url.path.split("/") if _TOKENISH.match(unquote(seg))]
        pairs = parse_qsl(url.query, keep_blank_values=True)
        secret_names = set(credential_names(name for name, _ in pairs))
        parts += [item for name, item in pairs if name in secret_names]
    elif "=" in value:
        for item in value.split():
            key, sep, item_value = item.partition("=")
            if sep and key.lower() in ("user", "password"):
                parts.append(item_value.strip("'\""))
    found = {p for p in parts if len(p) >= PART_MIN_CHARS}
    found |= {unquote(p) for p in found if len(unquote(p)) >= PART_MIN_CHARS}
    return sorted(found, key=len, reverse=True)


def secret_strings(value: Any) -> list[str]:
    """Every string a secret value holds, at any depth (numbers as text): a string that
    holds a JSON object or list gives its own strings too, since whoever uses it reads
    it parsed (a secret config saved as JSON text, a JSON credentials file in one
    environment variable)."""
    if isinstance(value, str):
        return [value, *secret_strings(_json_container(value))]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return secret_strings(dataclasses.asdict(value))
    if isinstance(value, dict):
        return [s for v in value.values() for s in secret_strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in secret_strings(v)]
    if value is None or isinstance(value, bool):
        return []
    return [str(value)]


def _json_container(text: str) -> Any:
    """The JSON object or list ``text`` holds, else None."""
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict | list) else None
