"""The operators' test helper runs a guard function exactly as the pipeline would."""

from __future__ import annotations

import re

from executions.guards import Finding, Violation, texts
from executions.guards.findings import redacted
from executions.guards.pii import find_pii
from executions.guards.testing import check_after, check_before


def no_deletes(arguments, context):
    if arguments.get("method") == "DELETE":
        return Violation(f"{context.tool_name}: use GET.", {"arg": "method"})
    return None


def find_pins(output, context):
    pin = re.compile(rf"(?<=PIN)\d{{{context.options.get('digits', 4)}}}")
    return [
        Finding("pin", match.start(), match.end(), path)
        for path, text in texts(output)
        for match in pin.finditer(text)
    ]


def explodes(value, context):
    raise ValueError("no")


def test_check_before_allows_denies_and_fails_closed():
    assert check_before(no_deletes, {"method": "GET"}).action == "allow"
    denied = check_before(no_deletes, {"method": "DELETE"})
    assert denied.action == "deny" and denied.message == "tool_under_test: use GET."
    assert denied.decisions[0]["details"] == {"arg": "method"}
    asked = check_before(no_deletes, {"method": "DELETE"}, action="require_approval")
    assert asked.action == "require_approval"
    failed = check_before(explodes, {})
    assert failed.action == "deny" and failed.decisions[0]["error"] == "guard_failed"


def test_check_after_redacts_blocks_flags_and_fails_closed():
    output = {"note": "PIN1234 ok"}
    assert check_after(find_pins, output).output == {"note": "PIN[REDACTED:pin] ok"}
    assert output == {"note": "PIN1234 ok"}  # the original is not changed
    blocked = check_after(find_pins, output, action="block")
    assert blocked.blocked and blocked.output is None
    flagged = check_after(find_pins, output, action="flag")
    assert flagged.output == output and flagged.notes
    assert check_after(explodes, output).blocked


def test_a_finding_outside_the_output_fails_closed():
    def wrong_place(output, context):
        return [Finding("x", 0, 99, ("missing",))]

    outcome = check_after(wrong_place, {"note": "text"})
    assert outcome.blocked and outcome.decisions[0]["error"] == "guard_failed"


def test_a_card_number_sent_as_a_json_number_is_redacted_whole():
    output = {"card": 4111111111111111, "count": 3}
    found = find_pii(output, {})
    assert [f.record() for f in found] == [
        {"path": "$.card", "start": 0, "end": 16, "type": "payment_card"}
    ]
    assert redacted(output, found) == {"card": "[REDACTED:payment_card]", "count": 3}
