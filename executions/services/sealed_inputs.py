"""What an admitted call's record holds sealed (encrypted, read by the runner only).

The record keeps the arguments masked: a per-call secret is never among them,
nor any form of it repeated in another argument or a key (``arguments_masked``).
What the tool must still receive is sealed: the per-call secret values and,
when the masking changed anything, the real arguments. The runner unseals both
(``sealed_read``); only the secret values are what it redacts from outputs.

Sealed text is a JSON list ``[secrets, arguments or null]``; a record sealed
before arguments were masked holds the secrets' JSON object alone, read as such.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from executions.services.refusal_secrets import secret_forms, without_secret_values
from registry import crypto


@dataclass(frozen=True)
class Sealed:
    """A call's per-call secret values, and its real arguments when the record's are
    masked (None when the record holds them as they are)."""

    secrets: dict[str, Any] = field(default_factory=dict)
    arguments: dict[str, Any] | None = None

    def inputs(self, recorded: dict[str, Any] | None) -> dict[str, Any]:
        """The arguments the tool receives."""
        plain = self.arguments if self.arguments is not None else recorded
        return {**(plain or {}), **self.secrets}


def arguments_masked(
    plain: dict[str, Any], secrets: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``plain`` with every form of the ``secrets`` values redacted from its strings and
    keys (what the record keeps), and ``plain`` itself when that changed it (what is
    sealed), else None."""
    forms = secret_forms(secrets.values())
    masked = without_secret_values(plain, forms) if forms else plain
    return masked, (plain if masked != plain else None)


def sealed_write(sealed: Sealed) -> str:
    """The encrypted text of ``sealed`` ("" when there is nothing to seal)."""
    if not sealed.secrets and sealed.arguments is None:
        return ""
    return crypto.encrypt_json([sealed.secrets, sealed.arguments])


def sealed_read(text: str) -> Sealed:
    if not text:
        return Sealed()
    data = crypto.decrypt_json(text)
    if isinstance(data, list):
        secrets, arguments = data
        return Sealed(dict(secrets), None if arguments is None else dict(arguments))
    return Sealed(dict(data))  # sealed before arguments were masked: the secrets alone
