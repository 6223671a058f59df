"""The command executor's config keys: declared once, checked on save, read on each call."""

from __future__ import annotations

import json
import posixpath
import re
from fnmatch import fnmatchcase
from typing import Any

from django.conf import settings

from executions.executors.configs import (
    ConfigKey,
    ConfigValueError,
    ExecutorConfigs,
    credential_names,
    got,
    json_object,
    positive_integer,
    positive_number,
    shown,
    text,
)
from registry.models.mcp.stdio_env import REFUSED_ENV_NAMES

ALLOWLIST_SETTING = "TOOLHUB_COMMAND_ALLOWLIST"
ENV_SETTING = "TOOLHUB_COMMAND_ENV_VARS"

# ``{name}`` is replaced by the input ``name``; ``{{`` and ``}}`` are literal braces.
PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_.-]{0,63})\}")
# Whole names only (``fullmatch``): ``$`` would also match before a trailing newline.
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_FILE_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
# What a program reads as the end of its options (getopt and most others).
END_OF_OPTIONS = "--"

MAX_ARGS = 256
MAX_FILES = 64
MAX_MEMORY_MB = 64 * 1024
MAX_PROCESSES = 4096
MAX_CPU_SECONDS = 3600
MAX_TIMEOUT_SECONDS = 3600
MAX_OUTPUT_BYTES = 64 * 1024 * 1024


def allowed_executables() -> list[str]:
    return [str(p) for p in getattr(settings, ALLOWLIST_SETTING, []) if p]


def allowlist_problem(executable: str) -> str | None:
    """Why ``executable`` may not run (None when ``TOOLHUB_COMMAND_ALLOWLIST`` lists it)."""
    listed = allowed_executables()
    if executable in listed:
        return None
    return (
        f"{executable!r} is not listed in {ALLOWLIST_SETTING} (it lists "
        f"{', '.join(listed) if listed else 'nothing: command tools are off'})"
    )


def placeholders(template: str) -> list[str]:
    return [m.group(1) for m in PLACEHOLDER.finditer(template) if m.group(1)]


def _argv(value: Any) -> list[str]:
    """A JSON list of strings whose first item is an executable the allow-list names."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            raise ConfigValueError("got a string that is not a JSON list") from None
    if not isinstance(value, list) or not value:
        raise ConfigValueError(got(value))
    if len(value) > MAX_ARGS:
        raise ConfigValueError(f"it has {len(value)} items (at most {MAX_ARGS})")
    for index, item in enumerate(value):
        if not isinstance(item, str) or "\x00" in item:
            raise ConfigValueError(f"item {index} is not a string: {shown(item)}")
    executable = value[0]
    if placeholders(executable) or not executable.startswith("/"):
        raise ConfigValueError(
            f"its first item must be the absolute path of the program, got {shown(executable)}"
        )
    problem = allowlist_problem(executable)
    if problem:
        raise ConfigValueError(problem)
    return list(value)


def _parameter_name(value: Any) -> str:
    name = text(value)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}", name):
        raise ConfigValueError(got(value))
    return name


def env_names_refused(names) -> list[str]:
    """The names a command's environment may not set: refused outright (loader,
    interpreter, PATH, HOME, proxies…) or not matched by ``TOOLHUB_COMMAND_ENV_VARS``."""
    allowed = [str(p).upper() for p in getattr(settings, ENV_SETTING, []) if p]
    return sorted(
        n
        for n in names
        if any(fnmatchcase(n.upper(), p) for p in REFUSED_ENV_NAMES)
        or not any(fnmatchcase(n.upper(), p) for p in allowed)
    )


def _env(value: Any) -> dict[str, str]:
    env = json_object(value)
    result: dict[str, str] = {}
    for name, item in env.items():
        if not _ENV_NAME.fullmatch(str(name)):
            raise ConfigValueError(f"{shown(name)} is not an environment variable name")
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise ConfigValueError(f"the value of {name} must be a string")
        rendered = str(item)
        if "\x00" in rendered:
            raise ConfigValueError(f"the value of {name} contains a NUL character")
        result[str(name)] = rendered
    refused = env_names_refused(result)
    if refused:
        raise ConfigValueError(
            f"{', '.join(refused)}: not allowed by {ENV_SETTING}, or a variable that would "
            "make the program load other code or reach elsewhere (loader, interpreter, "
            "PATH, HOME, proxy and TLS settings are never set)"
        )
    return result


def _env_plain_check(value: dict[str, str]) -> None:
    names = credential_names(value)
    if names:
        raise ConfigValueError(
            f"{', '.join(names)} holds a credential: mark the env config secret "
            "(is_secret: true) so its values are encrypted and redacted from outputs"
        )


def workspace_path(name: Any) -> str:
    """A relative path inside the workspace: plain names, no ``..``, no absolute path."""
    if not isinstance(name, str) or not name or len(name) > 255:
        raise ConfigValueError(f"{shown(name)} is not a relative file path")
    parts = name.split("/")
    if posixpath.normpath(name) != name or not all(_FILE_PART.fullmatch(p) for p in parts):
        raise ConfigValueError(
            f"{shown(name)} is not a relative file path of plain names "
            "(letters, digits, '_', '-', '.'; no '..', no leading '/')"
        )
    return name


def _workspace_files(value: Any) -> dict[str, str]:
    files = json_object(value)
    if len(files) > MAX_FILES:
        raise ConfigValueError(f"it has {len(files)} files (at most {MAX_FILES})")
    result: dict[str, str] = {}
    for name, content in files.items():
        path = workspace_path(name)
        if not isinstance(content, str):
            raise ConfigValueError(f"the content of {path!r} must be a string")
        result[path] = content
    for path in result:  # a file cannot also be a directory of another
        if any(other.startswith(path + "/") for other in result):
            raise ConfigValueError(f"{path!r} is both a file and a directory")
    return result


def _end_of_options(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ConfigValueError(got(value))


def _positions(value: Any) -> frozenset[int]:
    """Positions in ``argv`` (1: the first argument after the program)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            raise ConfigValueError("got a string that is not a JSON list") from None
    if not isinstance(value, list):
        raise ConfigValueError(got(value))
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or not 1 <= item < MAX_ARGS:
            raise ConfigValueError(f"{shown(item)} is not a position from 1 to {MAX_ARGS - 1}")
    return frozenset(value)


def _bounded(parse, maximum):
    def read(value: Any):
        number = parse(value)
        if number > maximum:
            raise ConfigValueError(f"{got(value)} (at most {maximum})")
        return number

    return read


CONFIGS = ExecutorConfigs(
    "command",
    [
        ConfigKey(
            "argv",
            "a JSON list of strings: the absolute path of a program listed in "
            f"{ALLOWLIST_SETTING}, then its arguments, where {{name}} is the input 'name' "
            "as one whole argument",
            _argv,
            # Which program runs: a tool holding secrets would hand them to another.
            destination=True,
            target=True,
        ),
        ConfigKey(
            "end_of_options",
            "true when the program reads '--' as the end of its options (getopt: tar, grep, "
            "jq…): '--' then goes before the first argument built from an input",
            _end_of_options,
            default=False,
            destination=True,
            target=True,
        ),
        ConfigKey(
            "dash_values_at",
            "a JSON list of argv positions (1: the first argument after the program) whose "
            "input value may start with '-' (the program reads it as an option's value there)",
            _positions,
            default=frozenset(),
            destination=True,
            target=True,
        ),
        ConfigKey(
            "stdin",
            "the name of the input written to standard input",
            _parameter_name,
            target=True,
        ),
        ConfigKey(
            "env",
            f"a JSON object of environment variables {ENV_SETTING} allows, with string values",
            _env,
            default={},
            plain_check=_env_plain_check,
            sends_credentials=True,
            target=True,
        ),
        ConfigKey(
            "workspace_files",
            "a JSON object of relative file paths and their text (literal, or exactly "
            "{name} for the input 'name'), placed read-only in the workspace",
            _workspace_files,
            default={},
        ),
        ConfigKey(
            "timeout_seconds",
            f"a number of seconds above 0, at most {MAX_TIMEOUT_SECONDS}",
            _bounded(positive_number, MAX_TIMEOUT_SECONDS),
        ),
        ConfigKey(
            "memory_mb",
            f"a whole number of MB from 1 to {MAX_MEMORY_MB} (address space per process)",
            _bounded(positive_integer, MAX_MEMORY_MB),
            default=512,
        ),
        ConfigKey(
            "cpu_seconds",
            f"a whole number of CPU seconds from 1 to {MAX_CPU_SECONDS} (per process)",
            _bounded(positive_integer, MAX_CPU_SECONDS),
            default=30,
        ),
        ConfigKey(
            "max_processes",
            f"a whole number from 1 to {MAX_PROCESSES}",
            _bounded(positive_integer, MAX_PROCESSES),
            default=32,
        ),
        ConfigKey(
            "max_output_bytes",
            f"a whole number of bytes from 1 to {MAX_OUTPUT_BYTES} (per stream)",
            _bounded(positive_integer, MAX_OUTPUT_BYTES),
            default=1024 * 1024,
        ),
    ],
)
