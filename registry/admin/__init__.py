from registry.admin import access, audit, limits, mcp, tools  # noqa: F401
