"""What each guard kind's ``config`` may hold, as JSON Schemas (checked when a guard is saved).

The registry owns these declarations (they are data); the checks that read
them live in ``executions.guards``. A python guard names a function the
operator registered; which names exist only executions knows, so it registers
a lookup here (``guard_functions_register``) from ``ExecutionsConfig.ready()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jsonschema import Draft202012Validator

from registry import schema as schema_mod
from registry.models.guards import KIND_STAGE, STAGE_ACTIONS, GuardKind

PII_TYPES = ("email", "phone", "payment_card", "iban", "national_id")
# National identifiers with a distinctive written form and a check digit (python-stdnum
# validates each candidate): a bare run of digits is never taken for one.
NATIONAL_IDS = ("us_ssn", "es_dni", "it_codice_fiscale", "fr_nir", "br_cpf", "in_aadhaar")
SECRET_TYPES = (
    "private_key",
    "aws_access_key",
    "aws_secret_key",
    "gcp_api_key",
    "gcp_oauth_token",
    "jwt",
    "bearer_token",
    "basic_auth",
    "url_credentials",
    "github_token",
    "slack_token",
    "stripe_key",
    "named_credential",
)


def _subset(values: tuple[str, ...]) -> dict:
    return {"type": "array", "items": {"enum": list(values)}, "uniqueItems": True, "minItems": 1}


_POSITIVE = {"type": "integer", "minimum": 1, "maximum": 2**31 - 1}
CONFIG_SCHEMAS: dict[str, dict] = {
    GuardKind.PII: {
        "type": "object",
        "properties": {"types": _subset(PII_TYPES), "national_ids": _subset(NATIONAL_IDS)},
        "additionalProperties": False,
    },
    GuardKind.SECRETS: {
        "type": "object",
        "properties": {"types": _subset(SECRET_TYPES)},
        "additionalProperties": False,
    },
    GuardKind.INJECTION: {
        "type": "object",
        "properties": {
            "phrases": {
                "type": "array",
                "items": {"type": "string", "minLength": 4, "maxLength": 200},
                "maxItems": 100,
            }
        },
        "additionalProperties": False,
    },
    GuardKind.ARGUMENTS: {
        "type": "object",
        "properties": {
            "condition": {"type": "object", "minProperties": 1},
            "max_bytes": _POSITIVE,
            "max_string_length": _POSITIVE,
            "max_items": _POSITIVE,
            "message": {"type": "string", "minLength": 1, "maxLength": 500},
        },
        "anyOf": [
            {"required": ["condition"]},
            {"required": ["max_bytes"]},
            {"required": ["max_string_length"]},
            {"required": ["max_items"]},
        ],
        "additionalProperties": False,
    },
    GuardKind.PYTHON: {
        "type": "object",
        "properties": {
            "function": {"type": "string", "minLength": 1, "maxLength": 200},
            "options": {"type": "object"},
        },
        "required": ["function"],
        "additionalProperties": False,
    },
}
_VALIDATORS = {kind: Draft202012Validator(schema) for kind, schema in CONFIG_SCHEMAS.items()}

# name -> stage of each operator guard function; set by executions (None: no lookup yet).
_functions: Callable[[], dict[str, str]] | None = None


def guard_functions_register(provider: Callable[[], dict[str, str]]) -> None:
    global _functions
    _functions = provider


def guard_functions() -> dict[str, str]:
    """The operator's guard functions by name, with the stage each runs at."""
    return _functions() if _functions is not None else {}


def _problem(field: str, message: str) -> dict:
    return {"field": field, "message": message, "code": "invalid"}


def guard_problems(*, kind: str, stage: str, action: str, config: Any) -> list[dict]:
    """What is wrong with a guard's kind, stage, action and config (empty: nothing)."""
    if kind not in GuardKind.values:
        return [_problem("kind", f"Use one of: {', '.join(GuardKind.values)}.")]
    problems = [
        _problem(_config_field(error.absolute_path), error.message)
        for error in _VALIDATORS[kind].iter_errors(config)
    ][:5]
    if problems:
        return problems
    expected = KIND_STAGE.get(kind)
    if kind == GuardKind.PYTHON:
        expected = guard_functions().get(config["function"])
        if expected is None:
            return [
                _problem(
                    "config.function",
                    f"No guard function named {config['function']!r} is registered "
                    "(its module must be listed in TOOLHUB_GUARD_MODULES).",
                )
            ]
    if stage != expected:
        return [_problem("stage", f"A {kind} guard runs {expected} the call.")]
    if action not in STAGE_ACTIONS[stage]:
        allowed = ", ".join(STAGE_ACTIONS[stage])
        return [_problem("action", f"A guard that runs {stage} the call may: {allowed}.")]
    if kind == GuardKind.ARGUMENTS and "condition" in config:
        errors = schema_mod.fragment_errors(config["condition"])
        if errors:
            return [_problem("config.condition", errors[0])]
    return []


def _config_field(path) -> str:
    return "config" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def default_stage(kind: str, config: Any) -> str | None:
    """The stage a guard of ``kind`` runs at (a python guard: its function's), if known."""
    if kind == GuardKind.PYTHON:
        function = config.get("function") if isinstance(config, dict) else None
        return guard_functions().get(function) if isinstance(function, str) else None
    return KIND_STAGE.get(kind)
