"""How tools run: where a waiting call runs, what executors may reach, read and keep,
command tools' sandbox, database tools' connections, Python tools' and guards' code,
the demo's sandbox."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from toolhub.env import env_bool, env_egress_allow, env_float, env_int, env_list, env_map, env_str
from toolhub.settings.base import DEBUG
from toolhub.settings.mcp import DEFAULT_STDIO_ENV_VARS

# Largest upstream response kept (as an artifact) for one execution; the row keeps
# at most the tool's max_response_bytes of it.
TOOLHUB_MAX_ARTIFACT_BYTES = env_int("TOOLHUB_MAX_ARTIFACT_BYTES", 64 * 1024 * 1024, minimum=1024)

# Executor kinds whose calls run in the web process when the caller waits ("wait": true):
# admitted and started in one durable write, then run here instead of taking the broker
# hop (bench/README.md measures both). Default "http": an HTTP call is I/O the web thread
# would otherwise spend blocked on the worker's answer; database, MCP and Python tools
# keep their connections, sessions and code on workers. Calls that do not wait always go
# to workers. "true" = all kinds; "false" or "none" = none.
EXECUTOR_KINDS = frozenset({"http", "database", "mcp", "python", "command"})


def inline_wait_kinds(items: list[str]) -> frozenset[str]:
    """TOOLHUB_INLINE_WAIT's items as a set of executor kinds (``true``/``all``, ``false``/``none``)."""
    kinds = [item.strip().lower() for item in items if item.strip()]
    if kinds in (["true"], ["all"]):
        return EXECUTOR_KINDS
    if kinds in (["false"], ["none"]):
        return frozenset()
    unknown = sorted(set(kinds) - EXECUTOR_KINDS)
    if unknown:
        raise ImproperlyConfigured(
            f"TOOLHUB_INLINE_WAIT: unknown executor kind(s) {unknown}; "
            f"use true, false or a comma-separated list of {sorted(EXECUTOR_KINDS)}."
        )
    return frozenset(kinds)


TOOLHUB_INLINE_WAIT = inline_wait_kinds(env_list("TOOLHUB_INLINE_WAIT", ["http"]))

# Registry reads of the execution path (token, roles, tool, rights, rules) are kept in
# memory per process and dropped whenever the registry generation changes
# (registry/snapshot.py). Off: every call reads the database.
TOOLHUB_REGISTRY_CACHE = env_bool("TOOLHUB_REGISTRY_CACHE", default=True)

# How long an admitted call may wait in the queue for a concurrency slot.
TOOLHUB_QUEUE_WAIT_SECONDS = env_int("TOOLHUB_QUEUE_WAIT_SECONDS", 300, minimum=1)

# Egress guard: executors refuse private, loopback, link-local and metadata
# addresses unless listed here (CIDR networks and exact host names).
TOOLHUB_EGRESS_ALLOW = env_egress_allow("TOOLHUB_EGRESS_ALLOW")
# The demo only (./scripts/demo sets it): serve fake copies of the APIs the demo
# catalog calls at /demo-sandbox/ (toolhub/demo_sandbox.py), so the demo works
# offline. Never in production: refused with DEBUG off.
TOOLHUB_DEMO_SANDBOX = env_bool("TOOLHUB_DEMO_SANDBOX", default=False)
if TOOLHUB_DEMO_SANDBOX and not DEBUG:
    raise ImproperlyConfigured(
        "TOOLHUB_DEMO_SANDBOX serves fake upstream APIs for ./scripts/demo; "
        "it is refused when DEBUG is off."
    )
# Command tools (docs/tool-types.md "Command tools"): the executables they may run,
# as absolute paths (argv[0] must be one of them, checked when saved and at every run).
TOOLHUB_COMMAND_ALLOWLIST = env_list("TOOLHUB_COMMAND_ALLOWLIST")
for _executable in TOOLHUB_COMMAND_ALLOWLIST:
    if not _executable.startswith("/") or "\x00" in _executable:
        raise ImproperlyConfigured(
            f"TOOLHUB_COMMAND_ALLOWLIST: {_executable[:80]!r} is not an absolute path "
            "(list executables as /usr/bin/jq,/usr/bin/python3)"
        )
# Variables a command tool's env may set (names or fnmatch patterns, compared
# upper-cased); the loader, interpreter, PATH, HOME and proxy variables are refused
# whatever this says (registry.models.mcp.stdio_env.REFUSED_ENV_NAMES).
TOOLHUB_COMMAND_ENV_VARS = env_list(
    "TOOLHUB_COMMAND_ENV_VARS", [*DEFAULT_STDIO_ENV_VARS, "LANG", "LC_*", "TZ"]
)
# The sandbox program (bubblewrap); command tools refuse to run where it is missing.
TOOLHUB_BWRAP = env_str("TOOLHUB_BWRAP") or "/usr/bin/bwrap"
# Size of each command call's fresh workspace and /tmp (tmpfs, in memory), in MB.
TOOLHUB_COMMAND_WORKSPACE_MB = env_int("TOOLHUB_COMMAND_WORKSPACE_MB", 64, minimum=1)
# Named database connections for database tools: TOOLHUB_DATABASE_ALIASES="name=url,name2=url2".
TOOLHUB_DATABASE_ALIASES = env_map("TOOLHUB_DATABASE_ALIASES")
for _alias, _url in TOOLHUB_DATABASE_ALIASES.items():
    if _url.split("://", 1)[0].lower() not in ("postgresql", "postgres", "sqlite"):
        # Never quote the connection string: it may hold a password.
        raise ImproperlyConfigured(
            f"TOOLHUB_DATABASE_ALIASES: the connection of {_alias!r} is not a "
            "postgresql://…, postgres://… or sqlite:///… URL "
            '(expected TOOLHUB_DATABASE_ALIASES="name=url,name2=url2")'
        )
# Modules whose @tool-decorated functions become Python tools (imported by every
# process at start; then manage.py sync_python_tools registers them). Code comes
# from here, the operator's environment, never from the database.
TOOLHUB_PYTHON_TOOL_MODULES = env_list("TOOLHUB_PYTHON_TOOL_MODULES")
# Modules whose @guard-decorated functions become guard functions a guard of kind
# "python" may name (imported by every process at start, like the tool modules).
TOOLHUB_GUARD_MODULES = env_list("TOOLHUB_GUARD_MODULES")
# The time the guards of one stage of one call may take together, in seconds: when it
# is spent the guard running fails closed (arguments refused, output withheld).
TOOLHUB_GUARD_BUDGET_SECONDS = env_float("TOOLHUB_GUARD_BUDGET_SECONDS", 5.0, minimum=0.001)
# Database tools' own connection strings may not log in as a PostgreSQL superuser
# (or a role that reads server files or runs programs); true lifts that.
TOOLHUB_DATABASE_ALLOW_SUPERUSER = env_bool("TOOLHUB_DATABASE_ALLOW_SUPERUSER", False)
# Directories whose SQLite files a database tool's own connection_string may open
# (aliases above are the operator's and are not limited). ToolHub's database never.
TOOLHUB_SQLITE_DIRS = env_list("TOOLHUB_SQLITE_DIRS")
