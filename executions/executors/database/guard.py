"""Where a tool's own connection may go: the egress guard, the allowed SQLite directories, never ToolHub's own database."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psycopg
from django.conf import settings
from django.db import connections
from psycopg.conninfo import conninfo_to_dict

from executions import egress
from executions.executors.base import ErrorType
from executions.executors.configs import (
    ConfigValueError,
)
from executions.executors.database.values import SQLITE_DIRS_SETTING, _Failure

# --------------------------------------------------------------------------- where it may connect

# conninfo keys that would let a tool's connection string read files or settings of
# the worker's machine instead of naming a server.
_REFUSED_CONNINFO_KEYS = ("service", "servicefile", "passfile")


def _guard_postgresql(target: str) -> dict[str, str]:
    """Apply the egress guard to a tool's PostgreSQL connection string.

    Returns ``{"hostaddr": …}``: the address that was checked, so the connection is
    pinned to it (no second DNS lookup). A tool's own connection string must name
    one TCP host: no Unix socket, no default host from the worker's environment.
    """
    info = _conninfo(target)
    try:
        _check_conninfo(info)
    except ConfigValueError as exc:
        raise _Failure(ErrorType.CONFIG, str(exc)) from None
    host = str(info.get("host") or "").strip()
    hostaddr = str(info.get("hostaddr") or "").strip()
    port_text = str(info.get("port") or "5432").strip()
    if not host and not hostaddr:
        raise _Failure(
            ErrorType.EGRESS_DENIED,
            "the connection string names no host (a local socket or the worker's default "
            "is not allowed): give host and port",
        )
    if host.startswith(("/", "@")):
        raise _Failure(
            ErrorType.EGRESS_DENIED, f"a Unix socket ({host}) is not allowed: give a TCP host"
        )
    try:
        port = int(port_text)
    except ValueError:
        raise _Failure(ErrorType.CONFIG, f"invalid port {port_text!r}") from None
    try:
        destination = egress.check_host(hostaddr or host, port)
    except egress.EgressDenied as exc:
        raise _Failure(ErrorType.EGRESS_DENIED, str(exc)) from None
    except egress.HostResolutionError as exc:
        raise _Failure(ErrorType.CONNECTION, str(exc), retryable=True) from None
    _refuse_own_postgresql(destination.addresses, port, _dbname(info))
    return {"hostaddr": destination.address}


def _check_conninfo(info: Mapping[str, Any]) -> None:
    for key in _REFUSED_CONNINFO_KEYS:
        if info.get(key):
            raise ConfigValueError(f"the connection string may not set {key!r}")
    parts = (info.get("host"), info.get("hostaddr"), info.get("port"))
    if any("," in str(part or "") for part in parts):
        raise ConfigValueError("the connection string must name a single host")


def _conninfo(target: str) -> dict[str, Any]:
    try:
        return conninfo_to_dict(target)
    except psycopg.ProgrammingError as exc:
        raise _Failure(ErrorType.CONFIG, f"invalid connection string: {exc}") from None


def _dbname(info: Mapping[str, Any]) -> str:
    """The database a connection opens: without ``dbname``, libpq takes the user's name."""
    return str(info.get("dbname") or info.get("user") or "")


def _refuse_own_postgresql_alias(target: str) -> None:
    """An operator's alias is not held to the egress guard, but it still may not be
    ToolHub's own database (its sessions, users and audit log)."""
    info = _conninfo(target)
    try:
        port = int(str(info.get("port") or "5432").split(",")[0].strip())
    except ValueError:
        raise _Failure(ErrorType.CONFIG, "invalid port in the connection string") from None
    hosts = [h.strip() for h in str(info.get("hostaddr") or info.get("host") or "").split(",")]
    addresses: set[str] = set()
    for host in hosts:
        if not host or host.startswith(("/", "@")):
            addresses.add("127.0.0.1")  # a local socket: this machine
            continue
        try:
            addresses.update(
                i[4][0] for i in socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
            )
        except OSError:
            continue  # the connection itself will fail and say so
    _refuse_own_postgresql(tuple(addresses), port, _dbname(info))


def _own_databases() -> list[Mapping[str, Any]]:
    """ToolHub's databases: as configured, and as connected (a test run renames them)."""
    configured = list((getattr(settings, "DATABASES", None) or {}).values())
    return configured + [connections[alias].settings_dict for alias in connections]


def _refuse_own_postgresql(addresses: tuple[str, ...], port: int, dbname: str) -> None:
    """ToolHub's own database is never a tool's target, even where egress is allowed."""
    for own in _own_databases():
        if "postgresql" not in own.get("ENGINE", "") or not dbname:
            continue
        if dbname != own.get("NAME") or port != int(own.get("PORT") or 5432):
            continue
        own_host = str(own.get("HOST") or "")
        same_host = (
            not own_host
            or own_host.startswith("/")
            or own_host in addresses
            or any(ipaddress.ip_address(a).is_loopback for a in addresses)
            or _resolves_to(own_host, port, addresses)
        )
        if same_host:
            raise _Failure(ErrorType.EGRESS_DENIED, "a tool may not connect to ToolHub's database")


def _resolves_to(host: str, port: int, addresses: tuple[str, ...]) -> bool:
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except OSError:
        return False
    return any(info[4][0] in addresses for info in infos)


def _sqlite_dirs() -> list[Path]:
    return [Path(d).resolve() for d in getattr(settings, SQLITE_DIRS_SETTING, None) or [] if d]


def _guard_sqlite(path: str, trusted: bool) -> None:
    """A tool's own SQLite file must lie under ``TOOLHUB_SQLITE_DIRS``; ToolHub's
    database files are refused whatever configured them."""
    try:
        resolved = Path(path).resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        raise _Failure(ErrorType.CONFIG, f"invalid SQLite path: {exc}") from None
    for own in _own_databases():
        if "sqlite" not in own.get("ENGINE", "") or not own.get("NAME"):
            continue
        own_path = str(own["NAME"])
        if own_path == ":memory:" or own_path.startswith("file:"):
            continue
        if resolved == Path(own_path).resolve():
            raise _Failure(ErrorType.EGRESS_DENIED, "a tool may not open ToolHub's database")
    if trusted:
        return
    allowed = _sqlite_dirs()
    if not any(resolved.is_relative_to(directory) for directory in allowed):
        where = ", ".join(str(d) for d in allowed) or "none is set"
        raise _Failure(
            ErrorType.EGRESS_DENIED,
            f"SQLite files may only be opened under the directories in {SQLITE_DIRS_SETTING} "
            f"({where})",
        )
