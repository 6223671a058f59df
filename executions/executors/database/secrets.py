"""The secrets a connection string holds, and the login name hidden in error messages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict

from executions.executors.database.configs import _connection_string
from executions.executors.database.values import _Failure


def connection_secrets(connection_string: str) -> list[str]:
    """The connection string and its password (raw and percent-decoded), for redaction."""
    secrets = [connection_string]
    try:
        password = urlsplit(connection_string).password
    except ValueError:
        password = None
    if password:
        secrets += [password, unquote(password)]
    return secrets


def lent_secrets(configs: Mapping[str, Any]) -> list[str]:
    """The connection string the call uses (an operator's alias resolved) and its
    password, for the runner's redaction; none when the configs name no usable one."""
    try:
        connection_string, _ = _connection_string(configs or {})
    except _Failure:
        return []
    secrets = connection_secrets(connection_string)
    try:  # the key=value form's password too (connection_secrets reads URLs)
        password = conninfo_to_dict(connection_string).get("password")
    except psycopg.Error:
        password = None
    return [*secrets, password] if password else secrets


def connection_user(connection_string: str) -> str | None:
    """The user a connection string names (URL or key=value form), if any.

    Kept out of error messages (the server's "role … does not exist" names it),
    not out of outputs: a query may rightly return its own user's name.
    """
    try:
        return conninfo_to_dict(connection_string).get("user") or None
    except Exception:
        return None
