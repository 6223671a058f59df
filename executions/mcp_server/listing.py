"""``tools/list``: the active tools the caller may execute, as MCP lists them, by pages.

The same decision as ``registry/me`` (``registry.selectors.tools_executable_by``),
narrowed to a toolset's tools at ``/mcp/<slug>``. Names follow MCP's rule
(``registry.formats.provider_name``); a call may name a tool by its listed name.
Pages are ordered by tool name; the cursor is the last name of the page before.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json

from django.conf import settings

from registry import authorization, formats, selectors


class BadCursor(ValueError):
    """A cursor this server did not give out."""


def _encode(name: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"after": name}).encode()).decode()


def _decode(cursor: str) -> str:
    try:
        after = json.loads(base64.urlsafe_b64decode(cursor.encode()))["after"]
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeError):
        raise BadCursor("Invalid cursor: pass the nextCursor of the previous page.") from None
    if not isinstance(after, str):
        raise BadCursor("Invalid cursor: pass the nextCursor of the previous page.")
    return after


def _executable(user, toolset: str | None):
    qs = authorization.tools_executable_by(user)
    if toolset is not None:
        qs = selectors.toolset_tools(qs, toolset)
    return selectors.tool_discovery_list(qs)


def tools_page(user, toolset: str | None, cursor: str | None) -> tuple[list[dict], str | None]:
    """One page of the caller's tools (MCP ``Tool`` objects) and the next page's cursor."""
    size = settings.TOOLHUB_MCP_PAGE_SIZE
    qs = _executable(user, toolset)
    if cursor:
        qs = qs.filter(name__gt=_decode(cursor))
    tools = list(qs[: size + 1])
    more = len(tools) > size
    tools = tools[:size]
    items = formats.render(tools, "mcp")["tools"]
    return items, (_encode(tools[-1].name) if more else None)


def tools_fingerprint(user, toolset: str | None) -> str:
    """A digest of everything the caller's tools/list says: it moves when the list changes."""
    items = formats.render(list(_executable(user, toolset)), "mcp")["tools"]
    return hashlib.sha256(json.dumps(items, sort_keys=True, default=str).encode()).hexdigest()
