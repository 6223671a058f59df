"""What an admitted call's record holds sealed (encrypted, read by the runner only).

The record keeps the arguments masked: a per-call secret is never among them,
nor any form of it repeated in another argument (``arguments_masked``). What the
tool must still receive is sealed: the per-call secret values, and the real
value of each argument the masking changed. The runner unseals both
(``sealed_read``); only the secret values are what it redacts from outputs.

Sealed text is a JSON list ``[secrets, arguments]``; a record sealed before
arguments were masked holds the secrets' JSON object alone, read as such.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from executions.services.refusal_secrets import secret_forms, without_secret_values
from registry import crypto


@dataclass(frozen=True)
class Sealed:
    """A call's per-call secret values and the real values of its masked arguments."""

    secrets: dict[str, Any] = field(default_factory=dict)
    arguments: dict[str, Any] = field(default_factory=dict)

    def inputs(self, recorded: dict[str, Any] | None) -> dict[str, Any]:
        """The arguments the tool receives: those recorded, with the real values back."""
        return {**(recorded or {}), **self.arguments, **self.secrets}


def arguments_masked(
    plain: dict[str, Any], secrets: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``plain`` with every form of the ``secrets`` values redacted (what the record keeps),
    and the real values of the arguments that changed (what is sealed)."""
    forms = secret_forms(secrets.values())
    if not forms:
        return plain, {}
    masked = {name: without_secret_values(value, forms) for name, value in plain.items()}
    changed = {name: plain[name] for name in plain if masked[name] != plain[name]}
    return masked, changed


def sealed_write(sealed: Sealed) -> str:
    """The encrypted text of ``sealed`` ("" when there is nothing to seal)."""
    if not sealed.secrets and not sealed.arguments:
        return ""
    return crypto.encrypt_json([sealed.secrets, sealed.arguments])


def sealed_read(text: str) -> Sealed:
    if not text:
        return Sealed()
    data = crypto.decrypt_json(text)
    if isinstance(data, list):
        secrets, arguments = data
        return Sealed(dict(secrets), dict(arguments))
    return Sealed(dict(data))  # sealed before arguments were masked: the secrets alone
