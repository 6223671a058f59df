"""The headers a call authenticates with: the auth_type's, and inputs mapped to headers."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from executions.executors.base import ErrorType
from executions.executors.http.configs import HeaderFromInput, _config
from executions.executors.http.values import CALLER_ACCOUNT, _Failure, _header_value, _scalar


def lent_secrets(configs: Mapping[str, Any]) -> list[str]:
    """What the tool's authentication sends (its token, key or password, and the
    basic-auth token made of them), for the runner's redaction: known before the call
    runs, so an executor that fails in any way leaves none of it behind."""
    secrets: list[str] = []
    try:
        if _config(configs or {}, "auth_type") == CALLER_ACCOUNT:
            return []  # the person's token: the runner holds it as a secret of the call
        _auth_headers(configs or {}, secrets)
    except _Failure:
        pass  # the call fails the same way; what was read before is still its
    return secrets


def _auth_headers(
    configs: Mapping[str, Any], secrets: list[str], caller_token: str = ""
) -> list[tuple[str, str]]:
    auth_type = _config(configs, "auth_type")
    if auth_type == "none":
        return []
    if auth_type == CALLER_ACCOUNT:
        # The person's own token (the runner resolved it from their connection); none of
        # the tool's own credentials go with it.
        if not caller_token:
            raise _Failure(
                ErrorType.CONFIG,
                "auth_type 'caller_account' sends the caller's own token, and this call has "
                "none (it is not made for a person with a connection to the tool's provider)",
            )
        secrets.append(caller_token)
        value = _header_value("Authorization", f"Bearer {caller_token}", ErrorType.CONFIG)
        return [("Authorization", value)]
    if auth_type == "bearer_token":
        # The seed's form keeps the token in `api_key`; `bearer_token` names it too.
        token = _config(configs, "bearer_token") or _config(configs, "api_key")
        if not token:
            raise _Failure(
                ErrorType.CONFIG,
                "auth_type 'bearer_token' needs config 'api_key' (or its alias 'bearer_token')",
            )
        secrets.append(token)
        return [
            ("Authorization", _header_value("Authorization", f"Bearer {token}", ErrorType.CONFIG))
        ]
    if auth_type == "api_key":
        key = _config(configs, "api_key")
        if not key:
            raise _Failure(ErrorType.CONFIG, "auth_type 'api_key' needs config 'api_key'")
        header = _config(configs, "api_key_header")
        secrets.append(key)
        return [(header, _header_value(header, key, ErrorType.CONFIG))]
    # basic_auth: CONFIGS admits no other auth_type
    username, password = _config(configs, "username"), _config(configs, "password")
    if not username or not password:
        raise _Failure(
            ErrorType.CONFIG, "auth_type 'basic_auth' needs configs 'username' and 'password'"
        )
    token = base64.b64encode(f"{username}:{password}".encode()).decode("ascii")
    secrets.extend([password, token])
    return [("Authorization", f"Basic {token}")]


def _mapped_headers(
    configs: Mapping[str, Any], inputs: Mapping[str, Any], consumed: set[str], secrets: list[str]
) -> list[tuple[str, str]]:
    mapping: dict[str, HeaderFromInput] = _config(configs, "headers_input_map")
    headers: list[tuple[str, str]] = []
    for input_name, target in mapping.items():
        consumed.add(input_name)  # never sent in the query or body, even when empty
        value = inputs.get(input_name)
        if value is None:
            continue
        raw = _scalar(value)
        rendered = target.template.replace("{value}", raw)  # no str.format: no attribute access
        secrets.extend([raw, rendered])
        headers.append((target.header, _header_value(target.header, rendered, ErrorType.INPUT)))
    return headers
