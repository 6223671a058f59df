"""The config keys each executor knows, and what their values must be: one declaration each.

Every executor module declares its keys in ``CONFIGS`` (an ``ExecutorConfigs``).
The executor reads its configs through that declaration at run time
(``CONFIGS.read``), and the registry checks each config against the same
declaration when it is saved (``CONFIGS.problem``, through
``registry.hooks.config_spec``, which executions registers): a value the executor's reading of
a key refuses is refused at save time by the very same code, and the allowed
values (methods, auth types, …) are written down once. What depends on
several keys (``auth_type`` ``basic_auth`` needs ``username`` and ``password``), on the
inputs or on the network is still found only at run time (``config_error``,
``egress_denied``).

* A value that is missing, ``None`` or ``""`` is unset: the executor uses its
  default, and saving it is always allowed.
* ``ConfigKey.parse`` turns a stored value into the value the executor uses,
  or raises ``ConfigValueError``. ``ConfigKey.check`` (optional) adds what only
  the save refuses, because at run time another guard refuses it with its own
  error (the egress guard, for a URL's scheme) or reads it leniently on the
  safe side (``read_only``).
* Keys an executor does not know are not refused: a config may exist for
  something else (a template, an operator's note, a later version).

A ``ConfigValueError``'s text may quote the value; ``problem`` leaves it out
when the config is secret and only says what is expected.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from executions.redaction import credential_names
from registry.hooks import ConfigValueError

__all__ = [
    "ConfigValueError",
    "credential_names",
]  # declared by the registry, which catches it when saving

SHOWN_CHARS = 60


class ConfigError(ConfigValueError):
    """A config the executor cannot use, named: ``config 'key' must be …; detail``.

    For a secret config the message stops at what is expected: the detail may
    quote the value (cut short, which redaction of the whole value would miss).
    """

    def __init__(self, key: ConfigKey, detail: str, *, secret: bool = False):
        if secret:
            message = f"config {key.name!r} must be {key.expected} (the value is secret)"
        else:
            message = f"config {key.name!r} must be {key.expected}; {detail}"
        super().__init__(message)
        self.key = key.name
        self.detail = detail


class RunConfigs(dict):
    """A tool's configs as the runner hands them to an executor, knowing which keys
    hold secrets (so that an error about one never quotes it)."""

    def __init__(self, *args: Any, secret_keys: Iterable[str] = (), **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.secret_keys = frozenset(secret_keys)


def is_unset(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value == "")


def shown(value: Any) -> str:
    """A short quotation of ``value`` for an error message (never use it for a secret)."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def got(value: Any) -> str:
    return f"got {shown(value)}"


@dataclass(frozen=True)
class ConfigKey:
    name: str
    expected: str  # what a value must be, in words; never quotes a value
    parse: Callable[[Any], Any]
    default: Any = None
    check: Callable[[Any], None] | None = None  # save time only, after parse, on the raw value
    # Save time only, for a config that is not secret: what only a secret may hold.
    plain_check: Callable[[Any], None] | None = None
    # Where the tool's calls (and with them its credentials) go: only platform
    # admins change it on a tool that holds secrets (registry.services.tools).
    destination: bool = False
    # How the tool's credentials are sent (the scheme, the header carrying them):
    # held like ``destination`` on a tool that holds secrets.
    sends_credentials: bool = False
    # What the tool runs or where (the program, the statement, the server, the URL and
    # method): only platform admins change it (``registry.policy``, "what runs"). The one
    # place this is declared; the registry reads it through ``registry.hooks.config_spec``.
    target: bool = False


class ExecutorConfigs:
    """The known config keys of one kind of executor."""

    def __init__(self, kind: str, keys: Iterable[ConfigKey]):
        self.kind = kind
        self.keys: dict[str, ConfigKey] = {}
        for key in keys:
            if key.name in self.keys:
                raise ValueError(f"config key {key.name!r} is declared twice for {kind}")
            self.keys[key.name] = key

    def __contains__(self, name: object) -> bool:
        return name in self.keys

    def read(self, configs: Mapping[str, Any], name: str) -> Any:
        """The value the executor uses (the default when unset); raises ``ConfigError``."""
        key = self.keys[name]
        value = configs.get(name)
        if is_unset(value):
            return copy.copy(key.default)  # a default dict or list is never shared
        try:
            return key.parse(value)
        except ConfigValueError as exc:
            secret = name in getattr(configs, "secret_keys", ())
            raise ConfigError(key, str(exc), secret=secret) from None

    def problem(self, name: str, value: Any, *, secret: bool = False) -> str | None:
        """Why ``value`` cannot be saved as config ``name`` (None when it can).

        For a secret config the message says what is expected, never what was given.
        """
        key = self.keys.get(name)
        if key is None:
            known = next((k for k in self.keys if k.lower() == name.lower()), None)
            if known is not None:  # "ENDPOINT": saved, it would do nothing
                return (
                    f"Config '{name}' is not one the {self.kind} executor reads: config keys "
                    f"are case-sensitive. Did you mean '{known}'?"
                )
            return None
        if is_unset(value):
            return None
        try:
            parsed = key.parse(value)
            if key.check is not None:
                key.check(value)
            if not secret and key.plain_check is not None:
                key.plain_check(parsed)  # as the executor reads it (JSON text is parsed)
        except ConfigValueError as exc:
            if secret:
                return (
                    f"Config '{name}' must be {key.expected} (the value is secret and not shown)."
                )
            return f"Config '{name}' must be {key.expected}; {exc}."
        return None


def plain_credential(value: Any) -> None:
    """A ``plain_check`` for keys that only ever hold a credential."""
    raise ConfigValueError("it is a credential: save it as a secret (is_secret: true)")


def url_credentials(url: str) -> str | None:
    """What in ``url`` is a credential, in words: user information (``user@``,
    ``user:password@``; a token is often sent as the user name) or a query
    parameter whose name says so (``?api_key=``). None when there is none."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return "user information (user@ or user:password@)"
    names = credential_names(name for name, _ in parse_qsl(parts.query, keep_blank_values=True))
    if names:
        return f"the query parameter {', '.join(names)}"
    return None


# --------------------------------------------------------------------------- common readers


def text(value: Any) -> str:
    """A string, stripped of surrounding white space; not blank."""
    if not isinstance(value, str):
        raise ConfigValueError(got(value))
    stripped = value.strip()
    if not stripped:
        raise ConfigValueError("got only white space")
    return stripped


def one_of(choices: Iterable[str], *, upper: bool = False) -> Callable[[Any], str]:
    """A reader for one of ``choices`` (case and surrounding white space do not matter)."""
    allowed = tuple(choices)

    def parse(value: Any) -> str:
        if not isinstance(value, str):
            raise ConfigValueError(got(value))
        normal = value.strip().upper() if upper else value.strip().lower()
        if normal not in allowed:
            raise ConfigValueError(got(value))
        return normal

    return parse


def choice_words(choices: Iterable[str]) -> str:
    """``a, b or c``."""
    items = list(choices)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def positive_number(value: Any) -> float:
    """A finite number above zero (a numeric string too)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigValueError(got(value))
    try:
        number = float(value)
    except (ValueError, OverflowError):
        raise ConfigValueError(got(value)) from None
    if not math.isfinite(number) or number <= 0:
        raise ConfigValueError(got(value))
    return number


def positive_integer(value: Any) -> int:
    """A whole number from 1 (a string of digits too)."""
    if isinstance(value, bool):
        raise ConfigValueError(got(value))
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        try:
            number = int(value.strip())
        except ValueError:
            raise ConfigValueError(got(value)) from None
    else:
        raise ConfigValueError(got(value))
    if number < 1:
        raise ConfigValueError(got(value))
    return number


def json_object(value: Any) -> dict[str, Any]:
    """A JSON object, or a string holding one."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            raise ConfigValueError("got a string that is not valid JSON") from None
    if not isinstance(value, Mapping):
        raise ConfigValueError(f"got {_json_kind(value)}")
    return dict(value)


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return f"a {type(value).__name__}"
