"""Guards read text as it reads, not only as it is written.

An e-mail address, a card number or a key disguised with zero-width characters,
HTML character references, percent-encoding, full-width forms or look-alike
letters is still found (and redacted in the original text, at the right place);
an argument disguised with SQL comments, a look-alike letter, another flag order
or a ``.`` in a path still meets the rule written against it. Real upstream,
real API.
"""

from __future__ import annotations

import pytest

from executions.models import Execution
from tests.executions.guard_world import add_guard, answer_of, call, decisions_of, guarded_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(upstream, allow_loopback, eager_tasks):
    return guarded_world(upstream, "readings")


DISGUISED_PII = {
    "zero_width_space": "ja\u200bne.doe@example.com",
    "html_decimal_entity": "jane.doe&#64;example.com",
    "html_hex_entity": "jane.doe&#x40;example.com",
    "html_named_entity": "jane.doe&commat;example.com",
    "percent_encoded_at": "jane.doe%40example.com",
    "full_width_at": "jane.doe\uff20example.com",
    "cyrillic_letters": "j\u0430ne.doe@ex\u0430mple.com",
    "entity_of_full_width_at": "jane.doe&#xFF20;example.com",
    "soft_hyphen_in_card": "4111 1111 \u00ad1111 1111",
}


@pytest.mark.parametrize("case", list(DISGUISED_PII), ids=list(DISGUISED_PII))
def test_the_pii_guard_finds_disguised_personal_data_and_redacts_it_in_place(world, case):
    add_guard(world["tool"], name="pii", kind="pii", action="redact")
    disguised = DISGUISED_PII[case]
    answer = answer_of(world, path="text", body=f"write to {disguised} today")
    assert answer["status"] == "succeeded"
    label = "payment_card" if "card" in case else "email"
    assert answer["output_data"]["data"] == f"write to [REDACTED:{label}] today"
    (decision,) = decisions_of(answer, "pii")
    assert decision["action"] == "redact"


DISGUISED_SECRETS = {
    "zero_width_in_aws_key": "AKIA\u200bIOSFODNN7EXAMPLE",
    "cyrillic_a_in_aws_key": "\u0410KIAIOSFODNN7EXAMPLE",
    "full_width_aws_key": "\uff21\uff2b\uff29\uff21IOSFODNN7EXAMPLE",
    "entity_in_github_token": "ghp&#95;" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "percent_in_stripe_key": "sk%5Flive%5F" + "4eC39HqLyjWDarjtT1zdp7dc",
}


@pytest.mark.parametrize("case", list(DISGUISED_SECRETS), ids=list(DISGUISED_SECRETS))
def test_the_secrets_guard_finds_disguised_keys_and_redacts_them_in_place(world, case):
    add_guard(world["tool"], name="secrets", kind="secrets", action="redact")
    answer = answer_of(world, path="text", body=f"key: {DISGUISED_SECRETS[case]} ok")
    assert answer["status"] == "succeeded"
    text = answer["output_data"]["data"]
    assert text.startswith("key: [REDACTED:") and text.endswith("] ok"), text


def test_a_whole_base64_string_is_read_decoded(world):
    import base64

    add_guard(world["tool"], name="pii", kind="pii", action="redact")
    hidden = base64.b64encode(b"contact jane.doe@example.com").decode()
    answer = answer_of(world, path="text", body=hidden)
    assert answer["output_data"]["data"] == "[REDACTED:email]"


DENY_RULES = {
    # case: (the rule's pattern, an argument written to slip past it)
    "sql_comment_for_space": ("(?i)drop table", "DROP/**/TABLE users"),
    "cyrillic_o": ("(?i)drop table", "DR\u041eP TABLE users"),
    "flags_in_another_order": ("rm -rf", "rm -fr /"),
    "flags_apart": ("rm -rf", "rm -r -f /"),
    "dot_in_path": ("^/etc/passwd", "/etc/./passwd"),
    "double_slash_and_dot_dot": ("^/etc/passwd", "//tmp/../etc//passwd"),
    "zero_width_in_word": ("(?i)passwd", "/etc/pass\u200bwd"),
    "full_width_letters": ("(?i)drop table", "\uff24\uff32\uff2f\uff30 TABLE users"),
    "percent_encoded_path": ("^/etc/passwd", "%2Fetc%2Fpasswd"),
}


@pytest.mark.parametrize("case", list(DENY_RULES), ids=list(DENY_RULES))
def test_a_deny_rule_meets_an_argument_disguised_to_slip_past_it(world, case):
    pattern, argument = DENY_RULES[case]
    add_guard(
        world["tool"],
        name="no-danger",
        kind="arguments",
        action="deny",
        config={"condition": {"properties": {"body": {"pattern": pattern}}, "required": ["body"]}},
    )
    response = call(world, path="text", body=argument)
    assert response.status_code == 403, response.json()
    assert response.json()["error"]["code"] == "guard_denied"
    assert call(world, path="text", body="SELECT 1 FROM users").status_code == 200


def test_an_approval_condition_meets_a_disguised_argument_too(world):
    from registry.services import tools as tool_services

    tool_services.tool_update(
        actor=None,
        tool=world["tool"],
        data={
            "requires_approval": True,
            "approval_condition": {
                "properties": {"body": {"pattern": "rm -rf"}},
                "required": ["body"],
            },
        },
    )
    response = call(world, path="text", body="rm -fr /")
    assert response.status_code == 202, response.json()
    execution = Execution.objects.get(pk=response.json()["id"])
    assert execution.status == "pending_approval"
