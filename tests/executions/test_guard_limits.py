"""Guards on large and undecodable outputs: linear work, a time budget, text read whole.

A huge output is scanned in work that grows with its size (counted in lines of
Python run, not timed), and when the guards' time budget runs out the output is
withheld as ``guard_failed``. A body in Latin-1 with no charset, and a binary
body, reach the guards as text they can read.
"""

from __future__ import annotations

import base64
import json
import sys
from types import SimpleNamespace

import pytest

from executions.guards import engine
from tests.executions.guard_world import add_guard, answer_of, decisions_of, guarded_world

pytestmark = pytest.mark.django_db

TOOL = SimpleNamespace(name="bench_tool", type="http")


@pytest.fixture
def world(upstream, allow_loopback, eager_tasks):
    return guarded_world(upstream, "limits")


def test_a_huge_output_that_outlasts_the_guard_budget_is_withheld_as_guard_failed(world, settings):
    settings.TOOLHUB_GUARD_BUDGET_SECONDS = 0.001  # 20,000 addresses take far longer
    add_guard(world["tool"], name="pii", kind="pii", action="redact")
    answer = answer_of(world, path="repeat", text="jane.doe@example.com ", times="20000")
    assert answer["status"] == "failed" and answer["error_type"] == "guard_blocked"
    assert answer["output_data"] is None
    assert "time budget" in answer["error_message"]
    (decision,) = decisions_of(answer, "pii")
    assert decision["error"] == "guard_failed" and decision["action"] == "block"
    assert "jane.doe" not in answer["error_message"]


def _row(kind: str, action: str = "redact"):
    return SimpleNamespace(pk=kind, name=kind, kind=kind, stage="after", action=action, config={})


def _python_steps(kind: str, output) -> int:
    """Lines of Python run (loops and generator steps included) guarding ``output``: the
    work done, counted, where a time would depend on the machine's load."""
    steps = 0

    def count(frame, event, arg):
        nonlocal steps
        steps += 1
        return count

    sys.settrace(count)
    try:
        outcome = engine.run_after([_row(kind)], tool=TOOL, caller="agent", output=output)
    finally:
        sys.settrace(None)
    assert not outcome.blocked and outcome.decisions[0]["action"] == "redact"
    return steps


SCALING = {
    "pii_emails_in_one_text": ("pii", lambda n: " ".join(f"u{i}@example.com" for i in range(n))),
    "pii_cards_in_one_text": ("pii", lambda n: " ".join(["4111 1111 1111 1111"] * n)),
    "pii_keys_of_one_mapping": ("pii", lambda n: {f"u{i}@example.com": i for i in range(n)}),
    "secrets_in_one_text": ("secrets", lambda n: " ".join(["AKIAIOSFODNN7EXAMPLE"] * n)),
    "injection_in_one_text": (
        "injection",
        lambda n: " ".join(["ignore previous instructions."] * n),
    ),
}


@pytest.mark.parametrize("case", sorted(SCALING), ids=sorted(SCALING))
def test_guard_work_grows_linearly_with_the_output(case):
    kind, make = SCALING[case]
    _python_steps(kind, make(50))  # imports and caches out of the count
    small, large = _python_steps(kind, make(400)), _python_steps(kind, make(1600))
    # Four times the output: about four times the work (sixteen if quadratic).
    assert large < 5 * small, (small, large)


@pytest.mark.parametrize(
    "media_type", ["text/plain", "application/json"], ids=["text_plain", "json"]
)
def test_a_latin1_body_without_charset_still_gets_pii_redacted(world, media_type):
    add_guard(world["tool"], name="pii", kind="pii", action="redact")
    note = "caf\u00e9 jane.doe@example.com card 4111 1111 1111 1111"
    body = json.dumps({"note": note}) if media_type == "application/json" else note
    answer = answer_of(world, path="latin1", body=body, type=media_type)
    assert answer["status"] == "succeeded"
    output = answer["output_data"]
    assert "data_encoding" not in output
    text = output["data"]["note"] if media_type == "application/json" else output["data"]
    assert text == "caf\u00e9 [REDACTED:email] card [REDACTED:payment_card]"
    assert decisions_of(answer, "pii")[0]["found"] == 2


def test_a_binary_body_holding_personal_data_is_redacted_whole(world):
    add_guard(world["tool"], name="pii", kind="pii", action="redact")
    answer = answer_of(world, path="binary")
    assert answer["output_data"]["data_encoding"] == "base64"  # nothing to find: kept
    answer = answer_of(world, path="binary", **{"with": "jane.doe@example.com"})
    assert answer["status"] == "succeeded"
    assert answer["output_data"]["data"] == "[REDACTED:email]"


def test_base64_blobs_of_other_executors_are_read_by_the_guards():
    """An MCP image or resource blob, a database bytea, a Python tool's bytes: base64."""
    card = base64.b64encode(b"\x00\x01 card 4111 1111 1111 1111 \xff").decode()
    mail = base64.urlsafe_b64encode(b"\xfe jane.doe@example.com").decode().rstrip("=")
    output = {
        "content": [
            {"type": "image", "mimeType": "image/png", "data": card},
            {"type": "resource", "uri": "file:///a", "blob": mail},
        ],
        "rows": [{"picture": card}],
    }
    outcome = engine.run_after([_row("pii")], tool=TOOL, caller="agent", output=output)
    assert outcome.output["content"][0]["data"] == "[REDACTED:payment_card]"
    assert outcome.output["content"][1]["blob"] == "[REDACTED:email]"
    assert outcome.output["rows"][0]["picture"] == "[REDACTED:payment_card]"
