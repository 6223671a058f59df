from registry.admin import access, audit, limits, mcp, tools, users  # noqa: F401
