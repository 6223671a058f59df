"""Checking a call's arguments against the tool's JSON Schema, the way an LLM needs it.

Arguments may arrive as a JSON object or as the JSON text an LLM produced.
Before validation, values are coerced where the intent is unambiguous ("5" for
an integer, "true" for a boolean, a number for a string) and defaults are
filled in. Every problem is reported, each as ``{path, message, expected}``,
so the model can fix its call in one go.

What no JSON record can hold is refused, whichever way it arrives: ``NaN`` and
``Infinity`` (and numbers too large for a float), nesting deeper than
``MAX_DEPTH`` levels, NUL characters and unpaired surrogates (in values and in
argument names). Problems echo names and text made storable (U+FFFD in place).

The package, one concept a module: ``coercion`` (values the schema's way, defaults),
``patterns`` (regular expressions under a time limit), ``problems`` (each problem
as ``{path, message, expected}``) and ``arguments`` (``validate_arguments``).
"""

from __future__ import annotations

from executions.validation.arguments import validate_arguments
from executions.validation.coercion import loads_json
from executions.validation.patterns import PATTERN_TIMEOUT_SECONDS
from executions.validation.problems import ValidationOutcome

__all__ = ["PATTERN_TIMEOUT_SECONDS", "ValidationOutcome", "loads_json", "validate_arguments"]
