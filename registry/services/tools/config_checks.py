"""What a tool's config value may be: per-type config specs and cacheability."""

from __future__ import annotations

from typing import Any

from registry.hooks import ConfigValueError, config_spec
from registry.models import Tool
from registry.services.validation import raise_invalid
from toolhub import text as text_rules

NON_IDEMPOTENT_METHODS = {"POST", "PATCH", "PUT", "DELETE"}


def _read_config(tool_type: str, configs: dict[str, Any], key: str, fallback: Any) -> Any:
    """A config as the executor reads it; ``fallback`` when the executor could not use it."""
    spec = config_spec(tool_type)
    if spec is None:
        return fallback
    try:
        return spec.read(configs, key)
    except ConfigValueError:
        return fallback


def cacheability_problem(tool: Tool, configs: dict[str, Any] | None = None) -> str | None:
    """Why results of ``tool`` must not be cached (None when they may)."""
    if configs is None:
        configs = {c.config_key: c for c in tool.configs.all()}
    plain = {k: (c.plain_value if not c.is_secret else None) for k, c in configs.items()}
    if tool.type == "http":
        method = _read_config("http", plain, "method", str(plain.get("method")).upper())
        if method in NON_IDEMPOTENT_METHODS:
            return f"its method {method} is not idempotent"
        if "headers_input_map" in configs:
            return "it takes per-call secrets (headers_input_map)"
    if tool.type == "database" and not _read_config("database", plain, "read_only", True):
        return "it may write (read_only is false)"
    return None


def _check_cacheable(tool: Tool, configs: dict | None = None) -> None:
    if not tool.cache_ttl_seconds:
        return
    problem = cacheability_problem(tool, configs)
    if problem:
        raise_invalid(
            [
                {
                    "field": "cache_ttl_seconds",
                    "message": f"Results of this tool cannot be cached: {problem}. Set it to 0.",
                    "code": "not_cacheable",
                }
            ]
        )


def config_problem(tool_type: str, key: str, value: Any, *, secret: bool = False) -> str | None:
    """Why ``value`` cannot be config ``key`` of a ``tool_type`` tool (None when it can).

    The executor of that type declares the keys it knows and their values
    (``CONFIGS`` in its module); keys it does not know are allowed. A secret's
    value is never quoted.
    """
    spec = config_spec(tool_type)
    if spec is None:
        return None
    return spec.problem(key, value, secret=secret)


def _check_config(tool: Tool, key: str, value: Any, *, secret: bool, field: str) -> None:
    # Named as given (the value is stored in one of two columns, a secret encrypted).
    text_rules.refuse_unstorable({field: value})
    message = config_problem(tool.type, key, value, secret=secret)
    if message:
        raise_invalid([{"field": field, "message": message, "code": "invalid_config"}])


def check_tool_configs(tool: Tool, *, field: str = "type") -> None:
    """Refuse a tool whose stored configs do not suit its type (after a change of type)."""
    problems = []
    for config in tool.configs.all():
        message = config_problem(
            tool.type, config.config_key, config.value, secret=config.is_secret
        )
        if message:
            problems.append(
                {
                    "field": field,
                    "message": f"A stored config does not suit the {tool.type} executor. {message}",
                    "code": "invalid_config",
                }
            )
    if problems:
        raise_invalid(problems)
