"""What the built-in output guards see, whatever shape an upstream gives its output.

Pure functions on outputs an upstream (or a hostile MCP server) may send: a
secret or personal datum is found wherever it sits (a dictionary key, a list under
a credential's field), and no output makes a guard's patterns take quadratic time.
"""

from __future__ import annotations

import time

from executions.guards.findings import json_path
from executions.guards.pii import find_pii
from executions.guards.secrets import find_secrets

CARD = "4111111111111111"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def _timed(function, output) -> float:
    started = time.perf_counter()
    function(output, {})
    return time.perf_counter() - started


def test_a_text_of_repeated_jwt_prefixes_is_scanned_in_linear_time():
    # Every "eyJ" used to rescan the rest of the text: 120 kB took seconds, 300 kB minutes.
    for output in ("eyJ" * 40_000, "-eyJ" * 30_000, "eyJaaaa.eyJ" * 12_000):
        assert _timed(find_secrets, output) < 1.5


def test_secret_shaped_strings_are_still_found_where_a_word_begins():
    text = f"x eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijklmnopqrstuv ({AWS_KEY})"
    assert sorted(f.label for f in find_secrets(text, {})) == ["aws_access_key", "jwt"]
    assert find_secrets("XAKIAIOSFODNN7EXAMPLE", {}) == []


def _redact_all(output):
    from executions.guards import engine
    from registry.models import Guard

    guards = [
        Guard(name="pii", kind="pii", stage="after", action="redact", config={}),
        Guard(name="secrets", kind="secrets", stage="after", action="redact", config={}),
    ]
    tool = type("T", (), {"name": "t", "type": "http"})()
    return engine.run_after(guards, tool=tool, caller="agent", output=output)


def test_personal_data_and_secrets_in_dictionary_keys_are_redacted_and_never_recorded():
    output = {"users": {"bob@example.com": {"card": CARD}, AWS_KEY: True, "plain": 1}}
    outcome = _redact_all(output)
    text = repr(outcome.output) + repr(outcome.decisions)
    assert "bob@example.com" not in text and AWS_KEY not in text and CARD not in text
    users = outcome.output["users"]
    assert list(users) == ["[REDACTED:email]", "[REDACTED:aws_access_key]", "plain"]
    assert users["[REDACTED:email]"] == {"card": "[REDACTED:payment_card]"}
    paths = [f["path"] for d in outcome.decisions for f in d.get("findings", [])]
    assert "$.users{key 0}" in paths and "$.users[{key 0}].card" in paths


def test_a_credential_field_holding_a_list_is_still_a_credential():
    found = find_secrets(
        {"password": ["correct-horse-battery"], "api_key": [["sk-abcdefgh12"]]}, {}
    )
    assert sorted(json_path(f.path) for f in found) == ["$.api_key[0][0]", "$.password[0]"]


def test_card_numbers_are_found_however_their_digits_and_separators_are_written():
    written = [
        "4111.1111.1111.1111",
        "4111\u00a01111\u00a01111\u00a01111",  # no-break spaces
        "4111\u202f1111\u202f1111\u202f1111",  # narrow no-break spaces
        "4111  1111  1111  1111",
        "4111\t1111\t1111\t1111",
        "4111/1111/1111/1111",
        "\uff14" + "\uff11" * 15,  # full-width digits
        4111111111111111.0,
    ]
    for output in written:
        found = find_pii({"card": output}, {})
        assert [f.label for f in found] == ["payment_card"], output
    outcome = _redact_all({"card": "pay with \uff14" + "\uff11" * 15})
    assert "\uff11" not in repr(outcome.output) and "[REDACTED:payment_card]" in repr(
        outcome.output
    )


def test_decimal_numbers_and_failing_card_numbers_are_left_alone():
    for output in ("3.141592653589793", "4111.1111.1111.1112", "1.0000.0000.0000"):
        assert find_pii(output, {}) == [], output


def test_authorization_values_basic_credentials_and_passwords_in_urls_are_secrets():
    output = {
        "headers": {"Authorization": "Token abcdefghijklmnop1234"},
        "log": 'curl -H "Authorization: Basic dXNlcjpodW50ZXIyMjI="',
        "error": "could not connect to postgres://app:S3cretPassw0rd@10.0.0.1:5432/db",
    }
    outcome = _redact_all(output)
    text = repr(outcome.output)
    for secret in ("abcdefghijklmnop1234", "dXNlcjpodW50ZXIyMjI=", "S3cretPassw0rd"):
        assert secret not in text
    assert "postgres://app:[REDACTED:url_credentials]@10.0.0.1" in text
    assert find_secrets("a basic understanding of http://example.com:8080/x", {}) == []


def test_the_new_secret_patterns_scan_hostile_texts_in_linear_time():
    for output in ("basic " * 60_000, "a://b:" * 60_000, "x://" + "a" * 300_000):
        assert _timed(find_secrets, output) < 1.5
