"""Personal data in outputs: e-mail addresses, phone numbers, payment cards, IBANs, national ids.

Patterns find candidates; check digits decide for those that have them:
payment cards pass the Luhn check (13 to 19 digits, not all one digit), IBANs
their country's length, format and mod-97 check, national ids their own
check (python-stdnum validates both, imported the first time a PII guard
runs). A number that fails its check is left as it is. E-mail addresses and
phone numbers have no check digit: the patterns are the whole test (phone
numbers need an international ``+`` prefix or the 3-3-4 North American
grouping with separators, so a bare run of digits is never taken for one).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from typing import Any

from executions.guards.budget import budgeted
from executions.guards.findings import Finding, texts
from executions.guards.readings import in_readings
from registry.guard_configs import NATIONAL_IDS, PII_TYPES

EMAIL = re.compile(
    r"(?<![\w.+%-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w-])"
)
PHONE_INTERNATIONAL = re.compile(r"(?<![\w+])\+[1-9](?:[ .-]?\(?\d\)?){6,16}(?![\d])")
PHONE_NANP = re.compile(r"(?<![\w(])(?:\(\d{3}\) ?|\d{3}[-. ])\d{3}[-. ]\d{4}(?!\d)")
# No leading look-behind: a pattern that starts with a character set is searched for
# at C speed; what may not come before a match is checked on the match (``_starts``).
CARD = re.compile(r"\d(?:[ \t-]{0,2}\d){12,18}(?![\d-])")
# Four-digit groups with another separator, the same between each group (dots, as
# some countries write them, slashes, underscores): a decimal number is not grouped so.
CARD_GROUPED = re.compile(r"\d{4}([./_])\d{4}\1\d{4}(?:\1\d{1,7})?(?![\d-])")
_NO_DIGITS = str.maketrans("", "", "0123456789")
IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")

# (pattern, stdnum module) per national id; each written form is distinctive.
NATIONAL_ID_PATTERNS: dict[str, list[tuple[re.Pattern, str]]] = {
    "us_ssn": [(re.compile(r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])"), "stdnum.us.ssn")],
    "es_dni": [
        (re.compile(r"\b\d{8}-?[A-Z]\b"), "stdnum.es.dni"),
        (re.compile(r"\b[XYZ]-?\d{7}-?[A-Z]\b"), "stdnum.es.nie"),
    ],
    "it_codice_fiscale": [
        (
            re.compile(
                r"\b[A-Z]{6}[0-9LMNP-V]{2}[A-EHLMPR-T][0-9LMNP-V]{2}[A-Z][0-9LMNP-V]{3}[A-Z]\b"
            ),
            "stdnum.it.codicefiscale",
        )
    ],
    "fr_nir": [
        (
            re.compile(r"(?<![\d])[12] ?\d{2} ?\d{2} ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}(?!\d)"),
            "stdnum.fr.nir",
        )
    ],
    "br_cpf": [(re.compile(r"(?<![\d.])\d{3}\.\d{3}\.\d{3}-\d{2}(?![\d-])"), "stdnum.br.cpf")],
    "in_aadhaar": [
        (re.compile(r"(?<![\d ])[2-9]\d{3} \d{4} \d{4}(?![ \d])"), "stdnum.in_.aadhaar")
    ],
}


@cache
def _validator(module: str) -> Callable[[str], bool]:
    import importlib

    return importlib.import_module(module).is_valid


def _starts(text: str, start: int, forbidden: str) -> bool:
    """Whether a match at ``start`` begins a token: the character before it (if any) is
    neither alphanumeric (when ``forbidden`` has "w") nor one of ``forbidden``."""
    if start == 0:
        return True
    before = text[start - 1]
    return not (("w" in forbidden and (before.isalnum() or before == "_")) or before in forbidden)


_NOT_DIGIT = re.compile(r"[^0-9]")


def _digits(text: str) -> str:
    # The text is plain_text's: its digits are ASCII.
    return _NOT_DIGIT.sub("", text)


def _cards(text: str) -> Iterator[tuple[str, int, int]]:
    luhn = _validator("stdnum.luhn")
    for match in (*CARD.finditer(text), *CARD_GROUPED.finditer(text)):
        if not _starts(text, match.start(), "0123456789.-"):
            continue
        digits = _digits(match.group())
        if 13 <= len(digits) <= 19 and len(set(digits)) > 1 and luhn(digits):
            yield "payment_card", match.start(), match.end()


def _ibans(text: str) -> Iterator[tuple[str, int, int]]:
    valid = _validator("stdnum.iban")
    for match in IBAN.finditer(text):
        # The pattern may take in a word that follows ("... 00 EUR"): try shorter.
        candidate = match.group()
        while len(candidate.replace(" ", "")) >= 15:
            if valid(candidate):
                yield "iban", match.start(), match.start() + len(candidate)
                break
            if " " not in candidate:
                break
            candidate = candidate.rsplit(" ", 1)[0]


def _national_ids(text: str, kinds: tuple[str, ...]) -> Iterator[tuple[str, int, int]]:
    for kind in kinds:
        for pattern, module in NATIONAL_ID_PATTERNS[kind]:
            valid = _validator(module)
            for match in pattern.finditer(text):
                if valid(match.group()):
                    yield f"national_id:{kind}", match.start(), match.end()


def _phones(text: str) -> Iterator[tuple[str, int, int]]:
    for pattern in (PHONE_INTERNATIONAL, PHONE_NANP) if "+" in text else (PHONE_NANP,):
        for match in pattern.finditer(text):
            if 8 <= len(_digits(match.group())) <= 15 or pattern is PHONE_NANP:
                yield "phone", match.start(), match.end()


def _emails(text: str) -> Iterator[tuple[str, int, int]]:
    for match in EMAIL.finditer(text):
        yield "email", match.start(), match.end()


# Where numbers are: a run that starts with a digit and goes on over digits and the
# separators numbers are written with. Only the runs with at least ``NUMBER_DIGITS``
# digits, widened to the whole words around them (an IBAN's country code, a DNI's
# letter, a phone's "+"), are searched for numbers: one scan of a long text instead of
# one per pattern.
_NUMBER_RUN = re.compile(r"\d[\d \t().,/+_-]*")
NUMBER_DIGITS = 7  # the fewest digits of any number looked for (a NIE's seven)
_WIDEN = 40  # at most this many characters of the words around a run


def _number_windows(text: str) -> Iterator[tuple[int, str]]:
    # Windows may overlap: ``find_pii`` keeps one finding per span.
    for run in _NUMBER_RUN.finditer(text):
        if len(_digits(run.group())) < NUMBER_DIGITS:
            continue
        low = run.start()
        while low > 0 and run.start() - low < _WIDEN and not text[low - 1].isspace():
            low -= 1
        high = run.end()
        while high < len(text) and high - run.end() < _WIDEN and not text[high].isspace():
            high += 1
        yield low, text[low:high]


def _numbers(text: str, types: tuple[str, ...], national_ids: tuple[str, ...]):
    windowed = tuple(kind for kind in national_ids if kind != "it_codice_fiscale")
    for offset, window in _number_windows(text):
        found = []
        if "payment_card" in types:
            found += _cards(window)
        if "iban" in types:
            found += _ibans(window)
        if "national_id" in types:
            found += _national_ids(window, windowed)
        if "phone" in types:
            found += _phones(window)
        for label, start, end in found:
            yield label, offset + start, offset + end
    if "national_id" in types and "it_codice_fiscale" in national_ids:
        # Letters and digits mixed (RSSMRA85T10A562S): not a run of digits.
        yield from _national_ids(text, ("it_codice_fiscale",))


def _spans(text: str, types: tuple[str, ...], national_ids: tuple[str, ...]):
    # Most specific first: a span one finder took is not taken again by a later one
    # (an IBAN's digits are not a phone number as well). A text with fewer than seven
    # ASCII digits holds none of the numbers, one without "@" no e-mail address: most
    # texts of a JSON output are skipped by these two C-speed checks.
    if len(text) - len(text.translate(_NO_DIGITS)) >= NUMBER_DIGITS:
        yield from _numbers(text, types, national_ids)
    if "@" in text and "email" in types:
        yield from _emails(text)


class _Plain(dict):
    """A ``str.translate`` table, filled as characters are met: every Unicode decimal
    digit to its ASCII digit (full-width, Arabic-Indic: U+FF14, U+0664 -> "4"), every space separator (no-break, narrow,
    figure spaces) to " ". One character for one: offsets stay those of the text."""

    def __missing__(self, code: int) -> int:
        char = chr(code)
        if char.isdecimal():
            plain = ord(str(int(char)))
        elif unicodedata.category(char) == "Zs":
            plain = ord(" ")
        else:
            plain = code
        self[code] = plain
        return plain


_PLAIN = _Plain()


def plain_text(text: str) -> str:
    """``text`` with the digits and spaces numbers are written with made ASCII (same length)."""
    return text if text.isascii() else text.translate(_PLAIN)


def find_pii(output: Any, config: dict) -> list[Finding]:
    """The personal data in ``output`` (its strings, and integers as text), also when its
    digits are not ASCII (full-width, Arabic-Indic) or its spaces are no-break ones, and
    in the readings of each text (``readings``: entities, look-alikes, base64 …)."""
    types = tuple(config.get("types") or PII_TYPES)
    national_ids = tuple(config.get("national_ids") or NATIONAL_IDS)
    findings: list[Finding] = []
    for path, text in texts(output):
        if len(text) < 6:  # shorter than any of them
            continue
        spans = in_readings(
            text, lambda t: first_claims(_spans(plain_text(t), types, national_ids))
        )
        findings.extend(Finding(label, start, end, path) for label, start, end in spans)
    return findings


def first_claims(spans: Iterable[tuple[str, int, int]]) -> Iterator[tuple[str, int, int]]:
    """The spans that overlap none before them. Which characters are claimed is kept
    as a mask of the text: each span costs its length, however many came before (a
    list of the spans taken, searched for each new one, made 40,000 e-mail addresses
    in one text take a minute)."""
    claimed = bytearray()
    for label, start, end in budgeted(spans):
        if end > len(claimed):
            claimed.extend(bytes(end - len(claimed)))
        if 1 in claimed[start:end]:
            continue
        claimed[start:end] = b"\x01" * (end - start)
        yield label, start, end
