"""The readings of an output's text the built-in guards match on, besides the text itself.

- the plain reading (``executions.validation.normalise.folded``): character
  references, percent-encoding, full-width forms, zero-width characters and
  look-alike letters read as the plain text they imitate; a place found there is
  mapped back to the original's characters, so redaction hits the right ones;
- the decoded reading of a string that is base64 as a whole (standard or URL-safe
  alphabet, at least 16 characters): a binary an executor passes on as base64 (an
  HTTP body that is not text, an MCP image, audio or blob, a database ``bytea``, a
  Python tool's bytes) or text hidden that way. Its bytes are read as UTF-8, or
  else as their printable ASCII (every other byte a space): text inside a binary is
  seen, compressed or encrypted content (image pixels, PDF streams, archives) and
  text in other encodings (UTF-16) are not. A place found
  there is the whole string: a binary is redacted whole.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable, Iterator

from executions.validation.normalise import folded

Spans = Iterable[tuple[str, int, int]]
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")


def base64_reading(text: str) -> str | None:
    """What ``text`` decodes to when it is base64 as a whole, else None."""
    if len(text) < 16 or not _BASE64.fullmatch(text):
        return None
    raw = text.rstrip("=").replace("-", "+").replace("_", "/")
    try:
        data = base64.b64decode(raw + "=" * (-len(raw) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.translate(_BINARY_AS_TEXT).decode("ascii")


# A binary read as text: its printable ASCII bytes as they are, every other byte a space
# (a byte such as 0xFF read as Latin-1 "ÿ" would join the word next to it).
_BINARY_AS_TEXT = bytes(b if 32 <= b < 127 or b in b"\t\n\r" else 32 for b in range(256))


def _readings(text: str) -> Iterator[tuple[str, Callable[[int, int], tuple[int, int]]]]:
    reading = folded(text)
    if reading is not None:
        yield reading.text, reading.original_span
    decoded = base64_reading(text)
    if decoded is not None:
        yield decoded, lambda start, end: (0, len(text))


def in_readings(text: str, scan: Callable[[str], Spans]) -> Iterator[tuple[str, int, int]]:
    """What ``scan`` finds in ``text`` (as it always did), then what it finds in the
    readings of ``text`` that covers characters not found already (offsets in ``text``;
    ``ja<zero-width space>ne@…`` is found whole in the reading, ``ne@…`` in the text)."""
    found = list(scan(text))
    yield from found
    claimed: bytearray | None = None
    for reading, original_span in _readings(text):
        if claimed is None:
            claimed = bytearray(len(text))
            for _, start, end in found:
                claimed[start:end] = b"\x01" * (end - start)
        for label, start, end in scan(reading):
            low, high = original_span(start, end)
            if 0 not in claimed[low:high]:
                continue  # found already (a place that reaches further is taken: redaction joins them)
            claimed[low:high] = b"\x01" * (high - low)
            yield label, low, high
