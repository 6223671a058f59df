"""A tool's regular expressions run against callers' text under a time limit."""

from __future__ import annotations

import time

import pytest

from executions.validation import PATTERN_TIMEOUT_SECONDS, validate_arguments

# Python's re needs minutes for these on ~30 characters (nested or overlapping repetition).
BACKTRACKING = r"^(a|aa)+$"
TEXT = "a" * 40 + "!"


def schema(**properties) -> dict:
    return {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }


def test_a_backtracking_pattern_is_a_clear_problem_within_the_limit():
    started = time.monotonic()
    outcome = validate_arguments(
        {"code": TEXT}, schema(code={"type": "string", "pattern": BACKTRACKING})
    )
    assert time.monotonic() - started < 10 * PATTERN_TIMEOUT_SECONDS + 1
    assert not outcome.ok
    (problem,) = outcome.errors
    assert problem["path"] == "code"
    assert "backtracks too much" in problem["message"] and BACKTRACKING in problem["message"]


def test_patterns_still_match_and_refuse_as_before():
    rule = schema(code={"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"})
    assert validate_arguments({"code": "ABC-12"}, rule).ok
    outcome = validate_arguments({"code": "abc"}, rule)
    assert not outcome.ok
    assert outcome.errors[0]["message"] == "'abc' does not match '^[A-Z]{3}-[0-9]+$'"
    assert outcome.errors[0]["expected"] == "string matching ^[A-Z]{3}-[0-9]+$"


@pytest.mark.parametrize("additional", [False, {"type": "integer"}])
def test_pattern_properties_and_additional_properties_keep_their_meaning(additional):
    rule = schema(
        tags={
            "type": "object",
            "patternProperties": {"^x-": {"type": "string"}},
            "additionalProperties": additional,
        }
    )
    assert validate_arguments({"tags": {"x-a": "1"}}, rule).ok
    wrong_type = validate_arguments({"tags": {"x-a": 1}}, rule)
    assert not wrong_type.ok and wrong_type.errors[0]["path"] == "tags.x-a"
    other = validate_arguments({"tags": {"other": "1"}}, rule)
    assert not other.ok
    if additional is False:
        assert other.errors[0]["message"] == "Unknown argument 'other'."
    else:
        assert other.errors[0]["path"] == "tags.other"
        assert validate_arguments({"tags": {"other": 5}}, rule).ok


def test_a_backtracking_property_pattern_is_a_problem_not_a_hang():
    rule = schema(
        tags={
            "type": "object",
            "patternProperties": {BACKTRACKING: {"type": "string"}},
            "additionalProperties": False,
        }
    )
    started = time.monotonic()
    outcome = validate_arguments({"tags": {TEXT: "v"}}, rule)
    assert time.monotonic() - started < 10 * PATTERN_TIMEOUT_SECONDS + 1
    assert not outcome.ok
    assert any("backtracks too much" in p["message"] for p in outcome.errors)
