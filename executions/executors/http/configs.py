"""The HTTP executor's config keys: declared once, checked on save, read on each call."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from executions import egress
from executions.executors.base import ErrorType
from executions.executors.configs import (
    ConfigError,
    ConfigKey,
    ConfigValueError,
    ExecutorConfigs,
    choice_words,
    credential_names,
    got,
    is_unset,
    json_object,
    one_of,
    plain_credential,
    positive_number,
    shown,
    text,
    url_credentials,
)
from executions.executors.http.values import (
    _ABSOLUTE_URL,
    _PLACEHOLDER,
    AUTH_TYPES,
    DEFAULT_API_KEY_HEADER,
    HEADER_NAME,
    METHODS,
    _Failure,
    _header_text_problem,
    _scalar,
)
from registry.models import UpstreamProvider
from registry.models.upstream import UPSTREAM_SLUG_PATTERN


def _header_name(value: Any) -> str:
    if not isinstance(value, str) or not HEADER_NAME.fullmatch(value):
        raise ConfigValueError(f"{shown(value)} is not a valid header name")
    return value


def _headers(value: Any) -> dict[str, str | None]:
    """Static headers: names checked, values as sent (``None``: not sent)."""
    headers: dict[str, str | None] = {}
    for name, item in json_object(value).items():
        _header_name(name)
        if item is None:
            headers[name] = None
            continue
        rendered = _scalar(item)
        problem = _header_text_problem(name, rendered)
        if problem:
            raise ConfigValueError(problem)
        headers[name] = rendered
    return headers


def _credential(value: Any) -> str:
    """A token or key sent in a header: a string (or a whole number) fit for a header."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ConfigValueError(got(value))
    rendered = str(value)
    if "\r" in rendered or "\n" in rendered or "\x00" in rendered:
        raise ConfigValueError("it contains a line break")
    if not rendered.isascii():
        raise ConfigValueError("it is not ASCII")
    return rendered


def _username(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ConfigValueError(got(value))
    if ":" in str(value):
        raise ConfigValueError("it contains ':'")
    return str(value)


def _password(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ConfigValueError(got(value))
    return str(value)


_PROVIDER_SLUG = re.compile(UPSTREAM_SLUG_PATTERN)


def _provider_slug(value: Any) -> str:
    slug = text(value)
    if not _PROVIDER_SLUG.match(slug):
        raise ConfigValueError(got(value))
    return slug


def _provider_registered(value: Any) -> None:
    """At save time: the provider must exist (a platform admin registers it first)."""
    if not UpstreamProvider.objects.filter(slug=str(value)).exists():
        raise ConfigValueError(
            f"no upstream provider has the slug {shown(value)}: register it first (admin, "
            "Upstream providers)"
        )


def _absolute_url(value: Any) -> str:
    url = text(value)
    if not _ABSOLUTE_URL.match(url):
        raise ConfigValueError(got(value))
    return url


def _check_url(value: str) -> None:
    """At save time: an absolute URL must parse and use a scheme the egress guard allows."""
    url = value.strip()
    if not _ABSOLUTE_URL.match(url):
        return  # a relative endpoint: appended to base_url
    try:
        parsed = httpx.URL(_PLACEHOLDER.sub("0", url))
        parsed.host  # noqa: B018 - decodes the host: an invalid IDNA label raises here
    except httpx.InvalidURL as exc:
        raise ConfigValueError(f"{shown(url)} is not a valid URL ({exc})") from None
    except UnicodeError as exc:  # idna.IDNAError
        raise ConfigValueError(f"{shown(url)} has an invalid host name ({exc})") from None
    if parsed.scheme.lower() not in egress.ALLOWED_SCHEMES or not parsed.raw_host:
        raise ConfigValueError(got(url))


@dataclass(frozen=True)
class HeaderFromInput:
    header: str
    template: str = "{value}"


_INPUT_MAP_KEYS = ("header", "template")


def _headers_input_map(value: Any) -> dict[str, HeaderFromInput]:
    mapped: dict[str, HeaderFromInput] = {}
    for input_name, target in json_object(value).items():
        where = f"input {input_name!r}"
        template = "{value}"
        if isinstance(target, Mapping):
            unknown = sorted(str(k) for k in target if k not in _INPUT_MAP_KEYS)
            if unknown:
                raise ConfigValueError(
                    f"{where}: unknown key(s) {', '.join(map(repr, unknown))} "
                    "(only 'header' and 'template')"
                )
            header = target.get("header")
            if not is_unset(target.get("template")):
                template = target["template"]
                if not isinstance(template, str):
                    raise ConfigValueError(f"{where}: the template must be a string")
                problem = _header_text_problem(str(header), template)
                if problem:
                    raise ConfigValueError(f"{where}: {problem} (in its template)")
        elif isinstance(target, str):
            header = target
        else:
            raise ConfigValueError(f"{where}: {got(target)}")
        if _is_host(header):
            raise ConfigValueError(
                f"{where}: a Host header is not allowed (the URL names the host)"
            )
        try:
            mapped[str(input_name)] = HeaderFromInput(_header_name(header), template)
        except ConfigValueError as exc:
            raise ConfigValueError(f"{where}: {exc}") from None
    return mapped


# Header names that carry credentials: in plain static headers they would be shown to
# every reader of the tool and written into the audit log.
_CREDENTIAL_HEADER_NAME = re.compile(
    r"^(authorization|proxy-authorization|cookie)$|token|secret|api[-_]?key|password|auth"
    r"|^(x-)?key$|access[-_]?key|subscription[-_]?key|signature|credential",
    re.IGNORECASE,
)


def _no_plain_credentials(value: Any) -> None:
    names = sorted(n for n in value if isinstance(n, str) and _CREDENTIAL_HEADER_NAME.search(n))
    if names:
        raise ConfigValueError(
            f"header {', '.join(names)} carries a credential: mark the config secret, or use "
            "auth_type with a secret bearer_token/api_key"
        )


def _no_plain_url_password(value: Any) -> None:
    found = url_credentials(value) if isinstance(value, str) else None
    if found:
        raise ConfigValueError(
            f"it carries a credential ({found}): mark the config secret, or use auth_type "
            "with a secret bearer_token, api_key or password"
        )


def _is_host(name: Any) -> bool:
    return isinstance(name, str) and name.strip().lower() == "host"


def _no_host_header(value: Any) -> None:
    """The URL names the host; a Host header would send the call (and its credentials)
    to another site behind the same address."""
    names = json_object(value) if not isinstance(value, dict) else value
    if any(_is_host(n) for n in names):
        raise ConfigValueError("a Host header is not allowed: the URL names the host")


def _no_plain_credential_params(value: Any) -> None:
    names = credential_names(value)
    if names:
        raise ConfigValueError(
            f"query parameter {', '.join(names)} carries a credential: mark the config "
            "secret, or use auth_type with a secret api_key"
        )


_CREDENTIAL = "a string of ASCII characters without line breaks"
_ABSOLUTE = "an absolute http(s) URL ({input} placeholders allowed)"

CONFIGS = ExecutorConfigs(
    "http",
    [
        ConfigKey(
            "base_url",
            _ABSOLUTE,
            _absolute_url,
            check=_check_url,
            plain_check=_no_plain_url_password,
            destination=True,
            target=True,
        ),
        ConfigKey(
            "endpoint",
            f"a path appended to base_url, or {_ABSOLUTE}",
            text,
            check=_check_url,
            plain_check=_no_plain_url_password,
            destination=True,
            target=True,
        ),
        ConfigKey(
            "method",
            f"one of {choice_words(METHODS)}",
            one_of(METHODS, upper=True),
            "GET",
            target=True,  # GET or DELETE of the same URL are different operations
        ),
        ConfigKey("timeout_seconds", "a positive number of seconds", positive_number),
        ConfigKey(
            "headers",
            "a JSON object of header names to values (ASCII, without line breaks)",
            _headers,
            {},
            check=_no_host_header,
            plain_check=_no_plain_credentials,
        ),
        ConfigKey(
            "query_params",
            "a JSON object of query parameter names to values",
            json_object,
            {},
            plain_check=_no_plain_credential_params,
        ),
        ConfigKey(
            "auth_type",
            f"one of {choice_words(AUTH_TYPES)}",
            one_of(AUTH_TYPES),
            "none",
            sends_credentials=True,
        ),
        ConfigKey("bearer_token", _CREDENTIAL, _credential, plain_check=plain_credential),
        ConfigKey("api_key", _CREDENTIAL, _credential, plain_check=plain_credential),
        ConfigKey(
            "api_key_header",
            "a valid HTTP header name",
            _header_name,
            DEFAULT_API_KEY_HEADER,
            sends_credentials=True,
        ),
        ConfigKey(
            "upstream_provider",
            "the slug of a registered upstream provider (auth_type caller_account)",
            _provider_slug,
            check=_provider_registered,
            sends_credentials=True,
        ),
        ConfigKey("username", "a string without ':'", _username),
        ConfigKey("password", "a string", _password, plain_check=plain_credential),
        ConfigKey(
            "headers_input_map",
            'a JSON object of input names to a header name, or to {"header": name, '
            '"template": "… {value} …"}',
            _headers_input_map,
            {},
        ),
    ],
)


def _config(configs: Mapping[str, Any], name: str) -> Any:
    try:
        return CONFIGS.read(configs, name)
    except ConfigError as exc:
        raise _Failure(ErrorType.CONFIG, str(exc)) from None
