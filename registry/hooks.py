"""What the executions app adds to the registry, registered at start-up.

``registry`` never imports ``executions`` (the layers are ``toolhub`` ←
``registry`` ← ``executions``). Where the registry needs to know something only
the executors know, executions registers it here from ``ExecutionsConfig.ready()``:

* the config keys each tool type's executor accepts (checked when a config is
  saved, by the very declaration the executor reads at run time);
* the places where executions keeps encrypted values (re-encrypted after a key
  rotation with the registry's own secrets).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class ConfigValueError(ValueError):
    """A config value that does not suit its key. The text may quote the value."""


# kind -> the executor's config declaration (an ``ExecutorConfigs``), or None for a
# kind without an executor. Set by executions; None until then (no checks).
_config_specs: Callable[[str], Any] | None = None


def config_specs_register(provider: Callable[[str], Any]) -> None:
    global _config_specs
    _config_specs = provider


def config_spec(tool_type: str) -> Any:
    """The config declaration of ``tool_type``'s executor (None when none is known)."""
    return _config_specs(tool_type) if _config_specs is not None else None


@dataclass(frozen=True)
class EncryptedField:
    """A column holding Fernet tokens: ``queryset()`` gives its rows."""

    label: str
    queryset: Callable[[], Any]
    field: str


_encrypted_fields: dict[str, EncryptedField] = {}


def encrypted_field_register(field: EncryptedField) -> None:
    _encrypted_fields[field.label] = field


def encrypted_fields() -> list[EncryptedField]:
    return list(_encrypted_fields.values())
