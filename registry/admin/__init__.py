from registry.admin import access, audit, tools  # noqa: F401
