"""The ASGI application (Django's threads, the MCP endpoint's mounts) and the MCP side of
ToolHub: the endpoint's limits and sessions (docs/mcp-server.md), and what an MCP server over stdio may run and be given."""

from __future__ import annotations

from toolhub.env import env_float, env_int, env_list
from toolhub.settings.api import DATA_UPLOAD_MAX_MEMORY_SIZE

# ASGI (toolhub/asgi.py): Django's threads per process (gthread's --threads under WSGI).
TOOLHUB_ASGI_DJANGO_THREADS = env_int("TOOLHUB_ASGI_DJANGO_THREADS", 4, minimum=1)
# ASGI (toolhub/asgi.py): paths served by an app other than Django's, named by dotted
# path (the project package imports no app, as ROOT_URLCONF includes urls by string).
TOOLHUB_ASGI_MOUNTS = {
    "/mcp": "executions.mcp_server.gate.application",
    "/.well-known/oauth-protected-resource": "executions.mcp_server.gate.application",
}
# The MCP endpoint (docs/mcp-server.md). Browser origins (scheme://host[:port], compared
# whole) it answers besides its own (DNS rebinding: a page elsewhere, or on another port
# of the same host, must not reach a local ToolHub).
TOOLHUB_MCP_ALLOWED_ORIGINS = env_list("TOOLHUB_MCP_ALLOWED_ORIGINS", [])
TOOLHUB_MCP_MAX_BODY_BYTES = env_int(
    "TOOLHUB_MCP_MAX_BODY_BYTES", DATA_UPLOAD_MAX_MEMORY_SIZE, minimum=1024
)
# A client that has not sent its whole request body in this many seconds gets a 408.
TOOLHUB_MCP_BODY_TIMEOUT = env_float("TOOLHUB_MCP_BODY_TIMEOUT", 10.0, minimum=0.1)
TOOLHUB_MCP_PAGE_SIZE = env_int("TOOLHUB_MCP_PAGE_SIZE", 100, minimum=1)
# Threads per web process for the MCP endpoint's database work and the calls it waits
# for (each may hold a database connection: mind PostgreSQL's max_connections).
TOOLHUB_MCP_THREADS = env_int("TOOLHUB_MCP_THREADS", 16, minimum=1)
# How long one tools/call waits for a human's approval before it answers with the
# execution to poll (2025 revisions), or asks the client to retry (2026-07-28).
TOOLHUB_MCP_APPROVAL_WAIT = env_float("TOOLHUB_MCP_APPROVAL_WAIT", 300.0, minimum=0.0)
TOOLHUB_MCP_APPROVAL_ROUND = env_float("TOOLHUB_MCP_APPROVAL_ROUND", 20.0, minimum=0.1)
# 2025 revisions' Mcp-Session-Id: kept in the shared cache (Redis), idle for at most this.
TOOLHUB_MCP_SESSION_TTL = env_int("TOOLHUB_MCP_SESSION_TTL", 24 * 3600, minimum=60)
# Sessions one token may hold: opening one more forgets the token's least recently
# used session (its client gets 404 and initializes again, as after an expiry).
TOOLHUB_MCP_SESSIONS_PER_TOKEN = env_int("TOOLHUB_MCP_SESSIONS_PER_TOKEN", 20, minimum=1)
# Listen streams (the 2025 GET stream, 2026-07-28 subscriptions/listen) open at once:
# per token across every web process (leases in Redis that expire when not renewed,
# so a process that dies frees its streams' places) and per web process (429 past either).
TOOLHUB_MCP_LISTEN_STREAMS_PER_TOKEN = env_int(
    "TOOLHUB_MCP_LISTEN_STREAMS_PER_TOKEN", 10, minimum=1
)
TOOLHUB_MCP_LISTEN_STREAMS_PER_PROCESS = env_int(
    "TOOLHUB_MCP_LISTEN_STREAMS_PER_PROCESS", 200, minimum=1
)
TOOLHUB_MCP_LISTEN_LEASE_SECONDS = env_int("TOOLHUB_MCP_LISTEN_LEASE_SECONDS", 30, minimum=3)
# A 2026-07-28 requestState (a call waiting for approval) is good for this many seconds
# after the answer that gave it, for the same caller, tool, arguments and path only.
TOOLHUB_MCP_REQUEST_STATE_TTL = env_int("TOOLHUB_MCP_REQUEST_STATE_TTL", 600, minimum=5)

# Executables an MCP server over stdio may run (registering one runs it on the workers).
TOOLHUB_MCP_STDIO_COMMANDS = env_list("TOOLHUB_MCP_STDIO_COMMANDS")
# Environment variables an MCP server's token_env_var may name (names or fnmatch
# patterns). ToolHub's own settings are never allowed, whatever this says.
TOOLHUB_MCP_TOKEN_ENV_VARS = env_list("TOOLHUB_MCP_TOKEN_ENV_VARS", ["*_MCP_TOKEN"])
# Variables a stdio MCP server's env may set (names or fnmatch patterns, compared
# upper-cased); the default admits the credentials and endpoints MCP servers are
# configured with. Loader, interpreter, package-manager, TLS, proxy and home
# variables are refused whatever this says (registry.models.mcp).
DEFAULT_STDIO_ENV_VARS = [
    "*_TOKEN",
    "*_API_KEY",
    "*_APIKEY",
    "*_KEY",
    "*_SECRET",
    "*_PASSWORD",
    "*_PAT",
    "*_ID",
    "*_USER",
    "*_USERNAME",
    "*_URL",
    "*_HOST",
    "*_ENDPOINT",
    "*_REGION",
    "*_ORG",
    "*_PROJECT",
    "*_WORKSPACE",
    "*_TEAM",
    "*_DOMAIN",
    "LOG_LEVEL",
    "*_LOG_LEVEL",
]
TOOLHUB_MCP_STDIO_ENV_VARS = env_list("TOOLHUB_MCP_STDIO_ENV_VARS", DEFAULT_STDIO_ENV_VARS)
