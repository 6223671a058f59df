"""Why a call waits for a person, and what the caller sent apart from the defaults
applied: recorded at admission, shown in the approval queue and on the record."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from executions.admin.inputs import sent_and_defaults
from executions.models import Approval, Execution
from executions.validation.arguments import defaulted_paths
from registry.services import tools as tool_services
from registry.services.audit_chain import audit_seal_all, audit_verify
from tests.executions import test_governance as governance
from tests.registry.test_audit_chain import tamper

pytestmark = pytest.mark.django_db

# The governance tests' fixtures: a tool with defaults, callers, an approver.
world, gated, _clean_shared_state = (
    governance.world,
    governance.gated,
    governance._clean_shared_state,
)
call = governance.call

QUEUE = reverse("admin:executions_approval_queue")


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def approver(gated):
    user = gated["approver"]
    user.is_staff = True
    user.save()
    return logged_in(user)


def test_a_call_matching_the_approval_condition_records_that_condition(gated, approver):
    held = call(gated["clients"][0], amount=5000, wait=False)
    approval = Approval.objects.get(execution_id=held.json()["id"])
    assert approval.required_because == "approval_condition"
    assert approval.condition_matched == {
        "properties": {"amount": {"minimum": 1000}},
        "required": ["amount"],
    }
    listed = governance.approval_client(gated["approver"]).get("/api/v1/approvals?status=pending")
    [item] = listed.json()["results"]
    assert item["required_because"] == "approval_condition"
    assert item["condition_matched"]["required"] == ["amount"]
    page = approver.get(QUEUE).content.decode()
    assert "The arguments match the tool&#x27;s approval condition" in page
    assert "minimum" in page  # the condition itself, as it was when the call was held


def test_a_tool_that_always_needs_approval_says_so(gated, approver):
    tool_services.tool_update(actor=None, tool=gated["tool"], data={"approval_condition": {}})
    held = call(gated["clients"][0], amount=1, wait=False)
    approval = Approval.objects.get(execution_id=held.json()["id"])
    assert (approval.required_because, approval.condition_matched) == (
        "tool_requires_approval",
        None,
    )
    assert "The tool requires approval for every call" in approver.get(QUEUE).content.decode()
    page = approver.get(reverse("admin:executions_approval_change", args=[approval.pk]))
    assert "The tool requires approval for every call" in page.content.decode()


def test_an_approval_from_before_reasons_were_recorded_says_it_is_not_recorded(gated, approver):
    held = call(gated["clients"][0], amount=5000, wait=False)
    Approval.objects.filter(execution_id=held.json()["id"]).update(required_because="")
    assert "Not recorded" in approver.get(QUEUE).content.decode()


def test_the_queue_shows_the_defaults_apart_from_what_the_agent_sent(gated, approver):
    held = call(gated["clients"][0], amount=5000, wait=False)
    execution = Execution.objects.get(pk=held.json()["id"])
    assert execution.input_data == {"path": "echo", "amount": 5000, "arg": "x"}
    assert execution.input_defaults == ["arg"]
    page = approver.get(QUEUE).content.decode()
    sent = page.split('class="arguments-sent">', 1)[1].split("</pre>", 1)[0]
    defaults = page.split('class="arguments-defaults">', 1)[1].split("</pre>", 1)[0]
    assert "amount" in sent and "arg" not in sent.replace("arguments", "")
    assert "&quot;arg&quot;: &quot;x&quot;" in defaults
    assert "Filled in from the tool's defaults (not sent)" in page


def test_a_call_that_sent_every_argument_has_no_defaults(world):
    done = call(world["clients"][0], arg="y", amount=3)
    assert Execution.objects.get(pk=done.json()["id"]).input_defaults == []


def test_an_edited_list_of_defaults_fails_verification(world):
    done = call(world["clients"][0], amount=3)
    assert done.json()["status"] == "succeeded"
    audit_seal_all(grace=timedelta(0))
    assert audit_verify().ok
    tamper(
        "UPDATE executions_execution SET input_defaults = '[]' WHERE id = %s", [done.json()["id"]]
    )
    report = audit_verify()
    assert not report.ok and "input_defaults" in report.problem.message


def test_the_approvals_list_filters_the_last_hour(gated, approver):
    old = call(gated["clients"][0], amount=5000, wait=False).json()["id"]
    new = call(gated["clients"][1], amount=6000, wait=False).json()["id"]
    tamper(
        "UPDATE executions_approval SET requested_at = %s WHERE execution_id = %s",
        [timezone.now() - timedelta(hours=2), old],
    )
    listed = approver.get(reverse("admin:executions_approval_changelist") + "?requested=1h")
    html = listed.content.decode()
    assert "Last hour" in html
    rows = html.split('id="result_list"', 1)[1]
    assert rows.count("<tr") == 2  # the header and the one call of the last hour
    assert Approval.objects.filter(execution_id=new).exists()


@pytest.mark.parametrize(
    ("sent", "applied", "expected"),
    [
        ({"a": 1}, {"a": 1, "b": 2}, ["b"]),
        ({"a": None}, {"a": 5}, ["a"]),  # null from an LLM: the default applied
        ({"o": {"x": 1}}, {"o": {"x": 1, "y": 2}}, ["o.y"]),
        ({}, {"o": {"y": 2}}, ["o"]),  # a default object counts once
        ({"a": 1}, {"a": 1}, []),
    ],
)
def test_defaulted_paths_name_what_the_caller_left_out(sent, applied, expected):
    assert defaulted_paths(sent, applied) == expected


def test_sent_and_defaults_split_nested_paths():
    sent, applied = sent_and_defaults({"o": {"x": 1, "y": 2}, "b": 3}, ["o.y", "b"])
    assert sent == {"o": {"x": 1}} and applied == {"o.y": 2, "b": 3}
