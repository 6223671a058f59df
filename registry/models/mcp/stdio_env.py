"""Which environment variables an stdio MCP server may be given, and the token's variable name."""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import Any

from django.conf import settings

from registry import crypto

ENV_VAR_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
_ENV_VAR_RE = re.compile(ENV_VAR_PATTERN)


# Prefixes of variables that configure ToolHub or its runtime, refused as token sources
# even when the settings did not read them (a later release may).
_OWN_PREFIXES = ("TOOLHUB_", "DJANGO_", "CELERY_")


def token_env_var_problem(name: str) -> str | None:
    """Why ``name`` may not be an MCP server's ``token_env_var``, or None when it may.

    The variable's value is sent as a bearer token to whatever URL the server
    row names, so a platform admin must not be able to pick any variable of the
    workers: only names ``TOOLHUB_MCP_TOKEN_ENV_VARS`` allows (default
    ``*_MCP_TOKEN``), and never one of ToolHub's own settings.
    """
    from toolhub.env import SETTINGS_NAMES

    if name in SETTINGS_NAMES or name.upper().startswith(_OWN_PREFIXES):
        return f"{name} is one of ToolHub's own settings; it is never sent to an MCP server."
    allowed = [str(p) for p in getattr(settings, "TOOLHUB_MCP_TOKEN_ENV_VARS", []) if p]
    if not any(fnmatchcase(name, pattern) for pattern in allowed):
        listed = ", ".join(allowed) if allowed else "nothing"
        return (
            f"{name} is not allowed by TOOLHUB_MCP_TOKEN_ENV_VARS (it allows {listed}); "
            "store the token instead or ask the operator to allow the variable."
        )
    return None


# What a stdio server's environment may set is an allow-list of name patterns
# (``TOOLHUB_MCP_STDIO_ENV_VARS``, in the settings with its default), because a
# deny-list of the variables that make a program run other code (loader,
# interpreter, package manager, TLS library, locale converters...) is never
# complete. The list below is refused on top, whatever the allow-list says.

# Refused whatever the allow-list says (compared upper-cased): variables that make
# the loader, an interpreter, a package manager or a library run or load other
# code than the command's, or send its traffic elsewhere.
REFUSED_ENV_NAMES = (
    "LD_*",
    "DYLD_*",
    "PYTHON*",
    "NODE_*",
    "NPM_*",
    "YARN_*",
    "PNPM_*",
    "BUN_*",
    "DENO_*",
    "PIP_*",
    "UV_*",
    "CONDA_*",
    "VIRTUAL_ENV",
    "PERL*",
    "RUBY*",
    "GEM_*",
    "BUNDLE_*",
    "CARGO_*",
    "RUSTUP_*",
    "GOPATH",
    "GOROOT",
    "GOFLAGS",
    "GOPROXY",
    "GOENV",
    "GOTOOLCHAIN",
    "GOBIN",
    "JAVA_*",
    "_JAVA_OPTIONS",
    "JDK_*",
    "CLASSPATH",
    "BASH_*",
    "ENV",
    "SHELL*",
    "PATH",
    "IFS",
    "PS4",
    "PROMPT_COMMAND",
    "HOME",
    "XDG_*",
    "TMPDIR",
    "GIT_*",
    "OPENSSL_*",
    "SSL_*",
    "*_CA_BUNDLE",
    "*_CA_CERTS",
    "CURL_*",
    "*_PROXY",
    "GCONV_PATH",
    "GLIBC_*",
    "MALLOC_*",
    "LOCPATH",
    "NLSPATH",
    "TERMINFO*",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "BROWSER",
)


ENV_REFUSED = (
    "{names}: not allowed by TOOLHUB_MCP_STDIO_ENV_VARS, or a variable that would let the "
    "process run other code than its command or send its traffic elsewhere (loader, "
    "interpreter, package manager, TLS, proxy and home settings are never set)."
)


def stdio_env_allowed() -> list[str]:
    return [str(p) for p in settings.TOOLHUB_MCP_STDIO_ENV_VARS]


def refused_env_names(names) -> list[str]:
    """The names among ``names`` a stdio server's environment may not set: refused
    outright, or not matched by ``TOOLHUB_MCP_STDIO_ENV_VARS``."""
    allowed = [p.upper() for p in stdio_env_allowed() if p]
    return sorted(
        n
        for n in names
        if any(fnmatchcase(n.upper(), p) for p in REFUSED_ENV_NAMES)
        or not any(fnmatchcase(n.upper(), p) for p in allowed)
    )


def env_problem(env: Any, stored: dict[str, str] | None = None) -> str | None:
    """Why ``env`` cannot be a server's environment, or None. ``stored``: the current one
    (a masked value keeps a stored value, so it must name a stored variable)."""
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        return "Must be an object whose values are strings."
    bad = sorted(k for k in env if not _ENV_VAR_RE.fullmatch(k))
    if bad:
        return f"Keys must be environment variable names (not {', '.join(bad)})."
    refused = refused_env_names(env)
    if refused:
        return ENV_REFUSED.format(names=", ".join(refused))
    kept = sorted(k for k, v in env.items() if v == crypto.MASK and k not in (stored or {}))
    if kept:
        return (
            f"{', '.join(kept)}: {crypto.MASK} keeps a stored value, but none is stored; "
            "give the value."
        )
    return None
