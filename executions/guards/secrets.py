"""Secret-shaped strings in outputs: private keys, cloud access keys, JWTs, bearer tokens,
HTTP Basic credentials, passwords in URLs.

Each type is a pattern of the form its issuer gives it (a fixed prefix and
alphabet, a PEM armour); a JWT must also have a header that decodes to JSON
naming ``alg`` or ``typ``. ``named_credential`` is the value of a field whose
name says it is a credential (``password``, ``api_key``, ``client_secret`` …),
eight characters or more. These are shapes, not the secrets ToolHub knows (the
runner already removes the tool's own secrets, whatever guards say).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from typing import Any

from executions.guards.budget import budgeted
from executions.guards.findings import Finding, texts
from executions.guards.readings import in_readings
from registry.guard_configs import SECRET_TYPES

# (type, pattern, group holding the secret: 0 = the whole match). A match must begin
# a word: each pattern says so with a look-behind, checked before the scan (a start
# inside a word, checked after it, let "eyJeyJeyJ…" rescan the rest of the text from
# every "eyJ": quadratic, minutes for a few hundred kilobytes). The JWT's look-behind is
# its own alphabet ("-" too): a JWT does not start inside a run of base64url.
PATTERNS: list[tuple[str, re.Pattern, int]] = [
    (
        "private_key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----"
            r".*?(?:-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
        0,
    ),
    ("aws_access_key", re.compile(r"(?<!\w)(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"), 0),
    (
        "aws_secret_key",
        re.compile(
            r"(?i)aws.{0,20}?(?:secret|sk).{0,20}?[=:\"'\s]+([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        1,
    ),
    ("gcp_api_key", re.compile(r"(?<!\w)AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"), 0),
    ("gcp_oauth_token", re.compile(r"(?<!\w)ya29\.[0-9A-Za-z_-]{20,}"), 0),
    ("jwt", re.compile(r"(?<![\w-])eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*"), 0),
    ("bearer_token", re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{16,}=*)"), 1),
    # HTTP Basic credentials (checked: the base64 decodes to "user:password").
    ("basic_auth", re.compile(r"(?i)\bbasic\s+([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])"), 1),
    # The password of a URL (postgres://app:s3cret@db/…, as a database error quotes it).
    (
        "url_credentials",
        re.compile(r"(?<![\w+.-])[A-Za-z][A-Za-z0-9+.-]{0,20}://[^\s:/@]{0,256}:([^\s@/]{1,256})@"),
        1,
    ),
    (
        "github_token",
        re.compile(r"(?<!\w)(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
        0,
    ),
    ("slack_token", re.compile(r"(?<!\w)xox[abposr]-[A-Za-z0-9-]{10,}"), 0),
    ("stripe_key", re.compile(r"(?<!\w)(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b"), 0),
]
NAMED_CREDENTIAL_MIN = 8
# Field names that say their value is a credential ("auth" alone would take "author").
CREDENTIAL_KEY = re.compile(
    r"passw|passwd|secret|token|api[-_]?key|access[-_]?key|private[-_]?key|credential"
    r"|authorization",
    re.IGNORECASE,
)
# ... and those that only look like it: pagination cursors, token counts and types.
NOT_CREDENTIAL_KEY = re.compile(
    r"page[-_]?token|token[-_]?type|tokens?[-_]?(count|used|usage)", re.I
)
_REDACTED_ALREADY = re.compile(r"^\[REDACTED(?::[a-z_:]+)?\]$")


def _jwt_header_ok(token: str) -> bool:
    header = token.split(".", 1)[0]
    try:
        decoded = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return False
    return isinstance(decoded, dict) and ("alg" in decoded or "typ" in decoded)


def _basic_ok(encoded: str) -> bool:
    try:
        decoded = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
        text = decoded.decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return False
    return ":" in text and text.isprintable()


# Case-insensitive patterns run only when their word is in the text (a C-speed check).
_NEEDS_WORD = {
    "aws_secret_key": "aws",
    "bearer_token": "bearer",
    "basic_auth": "basic",
    "url_credentials": "://",
}


# Every case-sensitive pattern's literal start, in one pattern: a text without any of
# them (most texts) is passed over after one scan instead of one per pattern.
_ANY_START = re.compile(
    r"-----BEGIN|A(?:KIA|SIA|BIA|CCA|3T|Iza)|ya29\.|eyJ|gh[pousr]_|github_pat_|xox|[sr]k_"
)


def _spans(text: str, types: set[str]) -> Iterator[tuple[str, int, int]]:
    lowered = text.lower() if types & _NEEDS_WORD.keys() else ""
    if _ANY_START.search(text) is None and not any(w in lowered for w in _NEEDS_WORD.values()):
        return
    for label, pattern, group in PATTERNS:
        if label not in types or (label in _NEEDS_WORD and _NEEDS_WORD[label] not in lowered):
            continue
        for match in budgeted(pattern.finditer(text)):
            if label == "jwt" and not _jwt_header_ok(match.group()):
                continue
            if label == "basic_auth" and not _basic_ok(match.group(1)):
                continue
            yield label, match.start(group), match.end(group)


def _named_credential(path: tuple, text: str) -> bool:
    # The nearest field name: a list under "password" holds passwords too.
    key = next((step for step in reversed(path) if not isinstance(step, int)), None)
    return (
        isinstance(key, str)
        and bool(CREDENTIAL_KEY.search(key))
        and not NOT_CREDENTIAL_KEY.search(key)
        and len(text) >= NAMED_CREDENTIAL_MIN
        and not _REDACTED_ALREADY.match(text)
    )


def find_secrets(output: Any, config: dict) -> list[Finding]:
    """The secret-shaped strings in ``output``."""
    types = set(config.get("types") or SECRET_TYPES)
    findings: list[Finding] = []
    for path, text in texts(output):
        if "named_credential" in types and _named_credential(path, text):
            findings.append(Finding("named_credential", 0, len(text), path))
            continue
        if len(text) < 16:
            continue
        findings.extend(
            Finding(label, start, end, path)
            for label, start, end in in_readings(text, lambda t: _spans(t, types))
        )
    return findings
