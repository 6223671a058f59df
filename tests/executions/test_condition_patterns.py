"""Conditions whose patterns an argument makes backtrack: they fail closed, quickly.

A deny rule (an argument guard's condition) or an approval condition decides by
the arguments matching a JSON Schema. Its ``pattern`` ran on Python's ``re``
with no time limit: an argument crafted to backtrack held the web process for
as long as the caller liked, and then counted as "does not match", so the call
went through. Now the pattern runs under the input schema's time limit and a
pattern that cannot be checked in time denies (guard) or waits for a person.
"""

from __future__ import annotations

import time

from executions.guards import engine
from executions.models import ApprovalReason
from executions.services.governance import approval_reason
from registry.models import Guard, Tool

BACKTRACKS = {"properties": {"name": {"pattern": "^(a|aa)+$"}}, "required": ["name"]}
CRAFTED = {"name": "a" * 36 + "!"}  # Python's re: ~4 s; a few more "a"s, hours


def test_an_argument_made_to_backtrack_a_deny_rule_is_denied_within_the_time_limit():
    guard = Guard(
        name="no-a-names",
        kind="arguments",
        stage="before",
        action="deny",
        config={"condition": BACKTRACKS},
    )
    tool = Tool(name="t", type="http")
    started = time.perf_counter()
    outcome = engine.run_before([guard], tool=tool, arguments=CRAFTED, caller="agent")
    assert time.perf_counter() - started < 2
    assert outcome.action == "deny" and outcome.guard == "no-a-names"
    assert "a" * 36 not in repr(outcome.decisions)


def test_an_argument_made_to_backtrack_an_approval_condition_waits_for_a_person():
    tool = Tool(name="t", type="http", requires_approval=True, approval_condition=BACKTRACKS)
    started = time.perf_counter()
    reason = approval_reason(tool, CRAFTED)
    assert time.perf_counter() - started < 2
    assert reason == ApprovalReason.CONDITION_UNUSABLE
    assert approval_reason(tool, {"name": "aaaa"}) == ApprovalReason.CONDITION
    assert approval_reason(tool, {"name": "bob"}) == ""
