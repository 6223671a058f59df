"""Which local commands an stdio MCP server may run (the operator's allow-list)."""

from __future__ import annotations

import os
import shlex
import shutil

from django.conf import settings


def allowed_stdio_commands() -> list[str]:
    """The entries of ``TOOLHUB_MCP_STDIO_COMMANDS`` (none: stdio servers are off)."""
    value = getattr(settings, "TOOLHUB_MCP_STDIO_COMMANDS", []) or []
    if isinstance(value, str):
        value = [value]
    return [str(v) for v in value if v]


def _is_path(text: str) -> bool:
    return os.sep in text or (os.altsep is not None and os.altsep in text)


def _same_command(command: str, entry: str) -> bool:
    """An absolute entry matches that exact path (or a bare command that resolves to it
    on PATH); a bare entry matches that bare command (resolved on PATH) or the absolute
    path it resolves to. A path ending in an allowed basename elsewhere does not match."""
    is_path = _is_path(command)
    candidate = os.path.normpath(command) if is_path else command
    resolved = candidate if is_path else shutil.which(command)
    if _is_path(entry):
        entry_path = os.path.normpath(entry)
        return candidate == entry_path or bool(
            resolved and os.path.normpath(resolved) == entry_path
        )
    if candidate == entry:
        return True
    which = shutil.which(entry)
    return bool(is_path and which and os.path.normpath(which) == candidate)


def stdio_command_problem(command: str, args=(), *, allowed: list[str] | None = None) -> str | None:
    """Why a stdio server may not run ``command`` with ``args``, or None when it may.

    The process runs on the workers with their rights, so only what
    ``TOOLHUB_MCP_STDIO_COMMANDS`` lists may be started. An entry is a command,
    optionally followed by arguments (split as a shell would):
    ``/usr/bin/npx @modelcontextprotocol/server-github``. With arguments, the
    server's arguments must begin with exactly those, so the entry allows one
    program; a bare interpreter (``python``, ``node``, ``npx``) allows whatever
    code its arguments name. Checked when a server is saved and again at sync and
    call time (the list may have narrowed since).
    """
    allowed = allowed_stdio_commands() if allowed is None else allowed
    if not allowed:
        return "stdio MCP servers are disabled: TOOLHUB_MCP_STDIO_COMMANDS allows no command"
    args = list(args or [])
    for entry in allowed:
        try:
            words = shlex.split(entry)
        except ValueError:
            continue
        if not words or not _same_command(command, words[0]):
            continue
        required = words[1:]
        if args[: len(required)] == required:
            return None
    return (
        f"stdio command {command!r} with these arguments is not allowed by "
        "TOOLHUB_MCP_STDIO_COMMANDS"
    )
