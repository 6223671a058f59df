"""A tool's regular expressions run under a time limit (patterns, patternProperties)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import regex
from jsonschema import Draft202012Validator, ValidationError, validators

from executions.validation.normalise import argument_readings
from registry.schema import NO_RETRIEVAL

# A tool's "pattern" runs against a caller's text in the web process. Python's re
# can backtrack for minutes on patterns such as (a|aa)+$; the regex module takes a
# time limit, so a pattern that would backtrack that long is a clear problem instead.
PATTERN_TIMEOUT_SECONDS = 0.1


class PatternUndecided(Exception):
    """A condition's pattern could not be checked in time: whether it matches is unknown.

    Conditions (an approval condition, an argument guard's) decide with the schema
    matching, so a pattern that times out may not count as "does not match" (an
    argument crafted to backtrack would then pass a rule written to stop it): the
    condition validator raises this, and its caller fails closed.
    """


@lru_cache(maxsize=1024)
def _compiled(pattern: str):
    return regex.compile(pattern)


def _search(pattern: str, text: str):
    """``regex.search`` within ``PATTERN_TIMEOUT_SECONDS``; a problem message if it cannot."""
    try:
        return bool(_compiled(pattern).search(text, timeout=PATTERN_TIMEOUT_SECONDS)), ""
    except TimeoutError:
        return False, (
            f"Could not be checked against the pattern {pattern!r} within "
            f"{PATTERN_TIMEOUT_SECONDS:g} s (the pattern backtracks too much on this text)"
        )
    except regex.error as exc:
        return False, f"The tool's pattern {pattern!r} is not a usable regular expression ({exc})"


def _decided(validator, pattern: str, text: str):
    """``_search``; a condition validator raises ``PatternUndecided`` instead of a problem."""
    matched, problem = _search(pattern, text)
    if problem and getattr(validator, "DECIDES_CONDITIONS", False):
        raise PatternUndecided(problem)
    return matched, problem


def _pattern(validator, pattern, instance, schema):
    if not validator.is_type(instance, "string"):
        return
    matched, problem = _decided(validator, pattern, instance)
    if problem:
        yield ValidationError(problem)
    elif not matched:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator, pattern_properties, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for key, value in instance.items():
            matched, problem = _decided(validator, pattern, key)
            if problem:
                yield ValidationError(problem, path=[key])
            elif matched:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


_DEFAULT_ADDITIONAL = Draft202012Validator.VALIDATORS["additionalProperties"]


def _additional_properties(validator, additional, instance, schema):
    """jsonschema's, with the patternProperties match under the time limit too."""
    patterns = schema.get("patternProperties")
    if not patterns or not validator.is_type(instance, "object"):
        yield from _DEFAULT_ADDITIONAL(validator, additional, instance, schema)
        return
    properties = schema.get("properties", {})
    extras = []
    for key in instance:
        if key in properties:
            continue
        outcomes = [_decided(validator, pattern, key) for pattern in patterns]
        if any(problem for _, problem in outcomes):
            continue  # already reported by patternProperties
        if not any(matched for matched, _ in outcomes):
            extras.append(key)
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        joined = ", ".join(repr(each) for each in sorted(extras))
        verb = "does" if len(extras) == 1 else "do"
        shown = ", ".join(repr(each) for each in sorted(patterns))
        yield ValidationError(f"{joined} {verb} not match any of the regexes: {shown}")


_Validator = validators.extend(
    Draft202012Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    },
)


_ConditionValidator = validators.extend(_Validator, {})
_ConditionValidator.DECIDES_CONDITIONS = True


@lru_cache(maxsize=512)
def _validator_for(schema_json: str) -> Draft202012Validator:
    return _Validator(json.loads(schema_json), registry=NO_RETRIEVAL)


@lru_cache(maxsize=512)
def condition_validator(condition_json: str) -> Draft202012Validator:
    """The validator of a condition (JSON): its patterns run under the time limit, and
    one that cannot be checked in time raises ``PatternUndecided``."""
    return _ConditionValidator(json.loads(condition_json), registry=NO_RETRIEVAL)


def condition_matches(condition: dict, arguments: Any) -> bool:
    """Whether ``arguments``, as given or in any of their readings (``normalise``:
    entities, look-alike letters, ``/**/``, ``/etc/./passwd``, ``rm -fr`` …), are valid
    against ``condition``. Raises ``PatternUndecided`` when a pattern cannot be checked
    in time (its caller fails closed)."""
    validator = condition_validator(json.dumps(condition, sort_keys=True))
    return validator.is_valid(arguments) or any(
        validator.is_valid(reading) for reading in argument_readings(arguments)
    )
