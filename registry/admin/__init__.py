from registry.admin import audit, tools  # noqa: F401
