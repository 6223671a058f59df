r"""Readings of a text as a person or a program would read it, for guards to match on.

Text can say one thing to a reader and another to a pattern: ``jane&#64;example.com``,
``jane%40example.com``, ``jane\uff20example.com`` (a full-width at sign),
``ja\u200bne@example.com`` (a zero-width space) and ``p\u0430sswd`` (a Cyrillic a) read as the plain text they imitate.
``folded`` gives that plain reading, with a map from each of its characters back to
the original, so a place found in the reading is redacted in the original:

- NFKC (full-width and compatibility forms, ligatures, mathematical letters);
- format characters removed (zero-width spaces and joiners, soft hyphens, BOM,
  bidirectional controls: Unicode category Cf);
- letters of other scripts that look like Latin ones folded to them (``CONFUSABLES``:
  Cyrillic and Greek look-alikes, dotless i);
- HTML character references (``&#64;``, ``&#x40;``, ``&commat;``) and percent-encoded
  bytes (``%40``, ``%E2%80%8B``) decoded, and what they decode to folded as above.

A reading is added to the original, never put in its place: guards match on both.
What no reading reaches: text encoded otherwise inside a longer text (base64 amid
prose; a whole string that is base64 is decoded by the output guards), data split
over several fields or reversed, words spelt out, homoglyphs outside ``CONFUSABLES``.
"""

from __future__ import annotations

import html
import posixpath
import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

# Letters that look like Latin ones (Unicode's confusables for the Latin alphabet,
# Cyrillic and Greek mostly: the ones phishing and filter evasion use).
CONFUSABLES = dict(
    zip(
        "авеѕіјкмнорсТтуухАВЕЅІЈКМНОРСХУҮԁԛԝɡıαβεικνορτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
        "abesijkmhopcTtyyxABESIJKMHOPCXYYdqwgiaBeikvoptuxABEZHIKMNOPTYX",
        strict=True,
    )
)
# What may differ from the text as given: anything not ASCII, a character reference,
# a run of percent-encoded bytes.
_SPECIAL = re.compile(
    r"[^\x00-\x7f]+|&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});"
    r"|(?:%[0-9A-Fa-f]{2})+"
)


class _Fold(dict):
    """A ``str.translate`` table filled as characters are met: each character to its
    plain reading (one character, none, or several)."""

    def __init__(self) -> None:
        super().__init__()
        self.not_one = set()  # characters whose reading is not one character

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if unicodedata.category(char) == "Cf":
            plain = ""
        else:
            plain = "".join(CONFUSABLES.get(c, c) for c in unicodedata.normalize("NFKC", char))
            plain = "".join(c for c in plain if unicodedata.category(c) != "Cf")
        if len(plain) != 1:
            self.not_one.add(char)
        self[code] = plain
        return plain


_FOLD = _Fold()


def needs_folding(text: str) -> bool:
    """Whether ``folded`` could read ``text`` otherwise (C-speed checks: most texts are
    ASCII with neither ``&`` nor ``%``)."""
    return not text.isascii() or "&" in text or "%" in text


@dataclass(frozen=True)
class Reading:
    """A reading of an original text: ``text``, and where each stretch of it came from
    (``starts[i]``: where stretch ``i`` begins in the reading; ``origins[i]``: the
    original's (start, end); ``literal[i]``: the stretch is the original's characters
    one for one, so a place inside it maps to the same place in the original)."""

    text: str
    starts: tuple[int, ...]
    origins: tuple[tuple[int, int], ...]
    literal: tuple[bool, ...]

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original that the reading's ``[start, end)`` came from."""
        return self._position(start, first=True), self._position(end - 1, first=False)

    def _position(self, index: int, *, first: bool) -> int:
        stretch = bisect_right(self.starts, index) - 1
        (low, high), literal = self.origins[stretch], self.literal[stretch]
        if literal:
            at = low + index - self.starts[stretch]
            return at if first else at + 1
        return low if first else high


class _Builder:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.starts: list[int] = []
        self.origins: list[tuple[int, int]] = []
        self.literal: list[bool] = []
        self.length = 0

    def add(self, text: str, low: int, high: int, literal: bool) -> None:
        if not text:
            return
        self.parts.append(text)
        self.starts.append(self.length)
        self.origins.append((low, high))
        self.literal.append(literal)
        self.length += len(text)

    def reading(self) -> Reading:
        return Reading(
            "".join(self.parts), tuple(self.starts), tuple(self.origins), tuple(self.literal)
        )


def _decoded(token: str) -> str:
    if token.startswith("&"):
        return html.unescape(token)
    if token.startswith("%"):
        return unquote(token, errors="strict") if _utf8(token) else token
    return token


def _utf8(token: str) -> bool:
    try:
        bytes.fromhex(token.replace("%", "")).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _add_special(builder: _Builder, token: str, low: int) -> None:
    if token[0] in "&%":
        decoded = _decoded(token)
        builder.add(decoded.translate(_FOLD), low, low + len(token), decoded == token)
        return
    plain = token.translate(_FOLD)
    if _FOLD.not_one.isdisjoint(token):
        builder.add(plain, low, low + len(token), True)  # one for one
        return
    for offset, char in enumerate(token):
        builder.add(_FOLD[ord(char)], low + offset, low + offset + 1, len(_FOLD[ord(char)]) == 1)


def folded(text: str) -> Reading | None:
    """The plain reading of ``text``, or None when it reads as it is written."""
    if not needs_folding(text):
        return None
    builder, position = _Builder(), 0
    for match in _SPECIAL.finditer(text):
        builder.add(text[position : match.start()], position, match.start(), True)
        _add_special(builder, match.group(), match.start())
        position = match.end()
    builder.add(text[position:], position, len(text), True)
    reading = builder.reading()
    return None if reading.text == text else reading


# Readings of an argument, for rules (argument guards, approval conditions) to match on:
# the plain reading, then that read as a command line or SQL would be: comments
# removed, spaces collapsed, paths normalised, short flags merged in one order.
_SQL_COMMENT = re.compile(r"/\*.*?(?:\*/|\Z)", re.DOTALL)
_SPACES = re.compile(r"\s+")
_PATH = re.compile(r"(?<![\w:/])(?:~|\.{1,2})?/[^\s'\"`;|&<>()]*")
_SLASHES = re.compile(r"/{2,}")
_FLAG_RUN = re.compile(r"(?<!\S)-[A-Za-z]+(?:\s+-[A-Za-z]+)*(?!\S)")


def _path(match: re.Match) -> str:
    path = _SLASHES.sub("/", match.group())
    return posixpath.normpath(path) if path not in ("/", "~/") else path


def _flags(match: re.Match, *, reverse: bool) -> str:
    letters = set(_SPACES.sub("", match.group().replace("-", "")))
    return "-" + "".join(sorted(letters, reverse=reverse))


def command_reading(text: str, *, reverse: bool) -> str:
    """``text`` as a shell or a database would take it: ``/**/`` comments as spaces,
    runs of spaces as one, ``/etc/./passwd`` as ``/etc/passwd``, ``-f -r`` and ``-fr``
    as ``-fr`` (``reverse``: ``-rf``)."""
    text = _SPACES.sub(" ", _SQL_COMMENT.sub(" ", text)).strip()
    text = _PATH.sub(_path, text)
    return _FLAG_RUN.sub(lambda m: _flags(m, reverse=reverse), text)


def _string_readings(text: str) -> tuple[str, str, str]:
    reading = folded(text)
    plain = reading.text if reading is not None else text
    return plain, command_reading(plain, reverse=False), command_reading(plain, reverse=True)


def _read(value: Any, which: int) -> Any:
    if isinstance(value, str):
        return _string_readings(value)[which]
    if isinstance(value, dict):
        return {key: _read(child, which) for key, child in value.items()}
    if isinstance(value, list):
        return [_read(child, which) for child in value]
    return value


def argument_readings(arguments: Any) -> list[Any]:
    """``arguments`` with every string as each of its readings (the plain one, as a
    command or SQL in either flag order), those that differ from ``arguments``."""
    readings: list[Any] = []
    for which in range(3):
        reading = _read(arguments, which)
        if reading != arguments and reading not in readings:
            readings.append(reading)
    return readings
