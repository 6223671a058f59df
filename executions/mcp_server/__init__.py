"""ToolHub as an MCP server: streamable HTTP at ``/mcp`` and ``/mcp/<toolset>``.

One more entry point into the one admission and dispatch (``executions.services.pipeline``):

- ``gate``: the ASGI app ``toolhub.asgi`` mounts. Checks the headers, Host and Origin
  (``checks``), the body's size and pace, the agent token (401 with
  ``WWW-Authenticate``), keeps the 2025 revisions' ``Mcp-Session-Id`` in the shared
  cache, gives a listen stream its place, then hands the request to the SDK.
- ``streams``: how many listen streams a token and a process may hold (leases in
  Redis), and the per-process watcher that tells them when a caller's list changed.
- ``server``: the ``mcp`` SDK's low-level server, stateless (any web process answers
  any request), with the ``tools/list`` and ``tools/call`` handlers.
- ``listing``: the tools a caller may execute (the decision ``registry/me`` uses), as
  MCP lists them, by pages.
- ``calls``: a ``tools/call`` through ``execution_submit``, waiting for approval, and
  cancellation; ``results``: an execution as a ``CallToolResult``.
- ``sessions``: the request's caller and client, and the session records.
"""
