"""What every governed call reads from the registry, kept in memory per process.

A call needs the caller's token, user, agent and roles, the tool with its
parameters, configs and rate-limit rules, and the caller's rights on the tool.
Read through the ORM that is a dozen statements per call, and they change
rarely. So each process keeps them in memory under the **registry generation**
(``toolhub_registry_generation``, migration 0007): database triggers give it a
new random value in the same statement as any write to those tables, by any
process and any path (services, admin, bulk updates, raw SQL). Before using
what it holds, a process reads the generation (one indexed row, ~0.1 ms); when
it changed, everything held is dropped. A revoked token, a removed grant or an
edited tool therefore takes effect on the very next request, everywhere.

Held objects are shared by the threads of a process: treat them as read-only.
``TOOLHUB_REGISTRY_CACHE=false`` turns the cache off (every call reads the
database), for comparison and as an escape hatch.
"""

from __future__ import annotations

import copy
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection

from toolhub.db.generation import GENERATION_SQL, NOT_CHECKED

MAX_ENTRIES = 50_000
_MISSING = object()
UNREAD = object()  # "no entries read yet": callers read the generation themselves


class _Store:
    def __init__(self) -> None:
        self.generation: int | None = None
        self.entries: dict[Any, Any] = {}
        self.lock = threading.Lock()


_store = _Store()


def generation() -> int | None:
    """The registry generation as this connection sees it (None: no generation row).

    On PostgreSQL the connection's health check at the request's first database
    use already read it (``toolhub/db/postgresql``): that value is taken instead.
    """
    take = getattr(connection, "take_checked_generation", None)
    if take is not None:
        seen = take()
        if seen is not NOT_CHECKED:
            return seen
    with connection.cursor() as cursor:
        cursor.execute(GENERATION_SQL)
        row = cursor.fetchone()
    return row[0] if row else None


def resolve(entries: Any) -> dict[Any, Any] | None:
    """``entries`` a caller already read in this request, or the current ones (``UNREAD``)."""
    return current() if entries is UNREAD else entries


def current() -> dict[Any, Any] | None:
    """The entries valid for the generation seen now, or None when caching is off."""
    if not settings.TOOLHUB_REGISTRY_CACHE:
        return None
    seen = generation()
    if seen is None:
        return None
    store = _store
    if store.generation != seen:
        with store.lock:
            if store.generation != seen:
                store.entries = {}
                store.generation = seen
    return store.entries


def cached(
    entries: dict[Any, Any] | None, key: Any, load: Callable[[], Any], *, keep_none: bool = True
) -> Any:
    """``entries[key]``, loading (and keeping) it on a miss; ``load()`` when not caching.

    ``keep_none=False`` for lookups a caller can make up at will (unknown names):
    their misses are not kept, so guessing cannot fill the memory. At
    ``MAX_ENTRIES`` the entries start over.
    """
    if entries is None:
        return load()
    value = entries.get(key, _MISSING)
    if value is _MISSING:
        value = load()
        if value is not None or keep_none:
            if len(entries) >= MAX_ENTRIES:
                entries.clear()
            entries[key] = value
    return value


def clear() -> None:
    """Forget everything held (tests; the generation makes this unnecessary otherwise)."""
    with _store.lock:
        _store.entries = {}
        _store.generation = None


@dataclass(eq=False)
class ToolSpec:
    """A tool as a call needs it: the row, its input schema, secrets, rules, guards and configs."""

    tool: Any
    input_schema: dict
    secret_names: frozenset[str]
    rules: tuple
    guards: tuple = ()
    _runtime: tuple[dict[str, Any], tuple[Any, ...]] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def runtime(self, build: Callable[[Any], tuple[dict[str, Any], list[Any]]]):
        """The executor's configs (secrets decrypted) and the secret values, built once."""
        if self._runtime is None:
            with self._lock:
                if self._runtime is None:
                    configs, secrets = build(self.tool)
                    self._runtime = (configs, tuple(secrets))
        configs, secrets = self._runtime
        # A shallow copy of the same type (the runner's configs also say which are secret).
        return copy.copy(configs), list(secrets)


def _load_spec(**lookup) -> ToolSpec | None:
    from registry.formats import secret_parameters
    from registry.models import Tool
    from registry.selectors import guards_for, rate_limit_rules_for

    tool = Tool.objects.prefetch_related("parameters", "configs").filter(**lookup).first()
    if tool is None:
        return None
    return ToolSpec(
        tool=tool,
        input_schema=tool.input_schema(),
        secret_names=frozenset(secret_parameters(tool)) if tool.type == "http" else frozenset(),
        rules=tuple(rate_limit_rules_for(tool)),
        guards=tuple(guards_for(tool)),
    )


def tool_spec(ref: Any, entries: Any = UNREAD) -> ToolSpec | None:
    """The tool named ``ref`` (its id, or its name when ``ref`` is not a UUID)."""
    entries = resolve(entries)
    if isinstance(ref, uuid.UUID):
        key: tuple = ("tool", ref)
        lookup: dict[str, Any] = {"pk": ref}
    else:
        try:
            tool_id = uuid.UUID(str(ref))
        except ValueError:
            if len(str(ref)) > _NAME_MAX:  # no tool has such a name
                return None
            key, lookup = ("tool-name", str(ref)), {"name": str(ref)}
        else:
            key, lookup = ("tool", tool_id), {"pk": tool_id}
    return cached(entries, key, lambda: _load_spec(**lookup), keep_none=False)


_NAME_MAX = 64  # Tool.name's max_length (checked by tests/executions/test_registry_cache.py)
