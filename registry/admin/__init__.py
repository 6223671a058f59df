from registry.admin import access, audit, mcp, tools  # noqa: F401
