"""Per-call secret inputs never reach a refusal's response, row, audit event, export or log.

A tool's secret parameters (keys of ``headers_input_map``) carry values such
as a customer's session token. Whatever shape such a value arrives in, and
however the call is refused, the value must appear nowhere: not in the 422
body, not in the Execution row (``raw_input``, ``error_message``,
``input_data``), not in any audit event, the API, the export, the admin or the
logs. Each test plants a unique canary and looks for it everywhere.
"""

from __future__ import annotations

import json
import logging
import uuid

import pytest
from django.forms.models import model_to_dict
from django.test import Client
from django.urls import reverse

from executions.models import Execution
from registry.models import AuditEvent
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import limits as limit_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.conftest import token_client
from tests.factories import make_user

pytestmark = [pytest.mark.django_db(transaction=True)]


def canary(label: str) -> str:
    return f"CANARY-{label}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def world(upstream, allow_loopback, eager_tasks, reviewer_user, reviewer_client):
    owner = make_user("owner-sasha")
    callers = role_services.role_create(actor=None, name="secret-callers")
    readers = role_services.role_create(actor=None, name="secret-readers")
    agent = agent_services.agent_create(
        actor=None, name="agent-secret", owner=owner, role_ids=[callers.pk, readers.pk]
    )
    reader = agent_services.agent_create(
        actor=None, name="agent-reader", owner=owner, role_ids=[readers.pk]
    )
    tool = tool_services.tool_create(
        actor=None,
        name="account_balance_lookup",
        type="http",
        timeout_seconds=5,
        parameters=[
            {
                "name": "account_id",
                "type": "string",
                "required": True,
                "json_schema": {"pattern": "^[A-Za-z0-9-]{4,40}$"},
            },
            {
                "name": "customer_token",
                "type": "string",
                "required": True,
                "json_schema": {"maxLength": 64},
            },
            {"name": "pin", "type": "integer", "json_schema": {"maximum": 9999}},
            {
                "name": "credentials",
                "type": "object",
                "json_schema": {
                    "properties": {"key": {"type": "string"}},
                    "additionalProperties": False,
                },
            },
            {"name": "note", "type": "string"},
        ],
        configs=[
            {"config_key": "base_url", "config_value": upstream.url},
            {"config_key": "endpoint", "config_value": "/{account_id}/x-customer-token"},
            {
                "config_key": "headers_input_map",
                "config_value": {
                    "customer_token": {"header": "X-Customer-Token", "template": "T {value}"},
                    "pin": {"header": "X-Pin"},
                    "credentials": {"header": "X-Credentials"},
                },
            },
        ],
    )
    plain = tool_services.tool_create(
        actor=None,
        name="plain_lookup",
        type="http",
        timeout_seconds=5,
        parameters=[{"name": "account_id", "type": "string", "required": True}],
        configs=[
            {"config_key": "base_url", "config_value": upstream.url},
            {"config_key": "endpoint", "config_value": "/{account_id}"},
        ],
    )
    for each in (tool, plain):
        grant_services.grant_create(actor=None, role=callers, action="execute", tool=each)
        grant_services.grant_create(actor=None, role=readers, action="read", tool=each)
    admin = Client()
    admin.force_login(reviewer_user)
    return {
        "client": token_client(agent.user),
        "reader": token_client(reader.user),
        "reviewer": reviewer_client,
        "admin": admin,
        "tool": tool,
        "plain": plain,
        "upstream": upstream,
    }


def call(client, tool: str, input_data, **extra):
    return client.post(
        "/api/v1/executions", {"tool": tool, "input_data": input_data, **extra}, format="json"
    )


def _body(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def assert_nowhere(world, caplog, execution_id: str, leaks, *responses, caller="client") -> None:
    """None of ``leaks`` is in the responses, the row, any audit event, the API
    (as the caller and as a reviewer), the exports, the admin pages or the logs."""
    row = Execution.objects.get(pk=execution_id)
    pages = [
        world[caller].get(f"/api/v1/executions/{execution_id}"),
        world["reviewer"].get(f"/api/v1/executions/{execution_id}"),
        world["reviewer"].get("/api/v1/executions/export?format=jsonl"),
        world["reviewer"].get("/api/v1/executions/export?format=csv"),
        world["reviewer"].get("/api/v1/audit/export?format=jsonl"),
        world["admin"].get(reverse("admin:executions_execution_change", args=[execution_id])),
        world["admin"].get(reverse("admin:executions_execution_changelist")),
    ]
    assert all(page.status_code == 200 for page in pages), [p.status_code for p in pages]
    assert execution_id in _body(pages[2])  # the export holds the refused call
    texts = {
        "responses": "\n".join(_body(r) for r in responses),
        "row": json.dumps(model_to_dict(row), default=str),
        "row values": json.dumps(
            Execution.objects.filter(pk=execution_id).values().get(), default=str
        ),
        "all rows": json.dumps(list(Execution.objects.values()), default=str),
        "audit": json.dumps(list(AuditEvent.objects.values()), default=str),
        "pages": "\n".join(_body(page) for page in pages),
        "logs": caplog.text
        + "\n".join(f"{r.getMessage()} {r.exc_text or ''} {r.__dict__}" for r in caplog.records),
    }
    for leak in leaks:
        for where, text in texts.items():
            assert leak not in text, f"{leak!r} found in {where}"


# 1. Arguments text that does not parse.


def _broken_texts(secret: str) -> list[str]:
    return [
        # A trailing comma.
        json.dumps({"account_id": "ACC-1001", "customer_token": secret})[:-1] + ",}",
        # Cut off inside the secret.
        '{"account_id": "ACC-1001", "customer_token": "' + secret,
        # Single quotes, as some models write.
        "{'account_id': 'ACC-1001', 'customer_token': '" + secret + "'}",
        # Valid JSON, but not an object.
        json.dumps(["ACC-1001", secret]),
    ]


@pytest.mark.parametrize("shape", range(4))
def test_unparseable_text_for_a_tool_with_secrets_is_not_kept(world, caplog, shape):
    caplog.set_level(logging.DEBUG)
    secret = canary("text")
    text = _broken_texts(secret)[shape]

    response = call(world["client"], "account_balance_lookup", text)

    assert response.status_code == 422, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid_arguments"
    assert [p["path"] for p in error["details"]] == ["$"]
    problem = error["details"][0]["message"]
    assert "not valid JSON" in problem or "must be a JSON object" in problem
    row = Execution.objects.get(pk=error["execution_id"])
    assert row.status == "invalid" and row.input_data is None
    assert row.raw_input and "secret parameters" in row.raw_input  # says why nothing is kept
    assert_nowhere(world, caplog, error["execution_id"], [secret, secret[8:]], response)

    # A tool without secret parameters still keeps the text that did not parse.
    plain_text = text.replace("customer_token", "note")
    kept = call(world["client"], "plain_lookup", plain_text)
    assert kept.status_code == 422
    assert Execution.objects.get(pk=kept.json()["error"]["execution_id"]).raw_input == plain_text


# 2. A secret argument of the wrong type or out of bounds.


def _wrong_shapes(secret: str, number: int) -> list[tuple[str, object, list[str]]]:
    """(parameter, value, strings that must appear nowhere)."""
    return [
        ("customer_token", [secret], [secret]),
        ("customer_token", {"token": secret, "more": [f"{secret}-inner"]}, [secret]),
        ("customer_token", {secret: 1}, [secret]),
        ("customer_token", [[secret, {"deep": f"{secret}-deep"}]], [secret]),
        ("customer_token", secret + "x" * 80, [secret]),  # too long
        ("customer_token", ["it's", f'q"{secret}\n'], [secret]),  # quotes and escapes
        ("customer_token", ["customer", "token"], ["['customer', 'token']"]),  # words of its name
        ("pin", secret, [secret]),  # not an integer
        ("pin", number, [str(number)]),  # above the maximum
        ("pin", [number], [str(number)]),
        ("credentials", {"key": [secret]}, [secret]),  # wrong type below the parameter
        ("credentials", {secret: "x"}, [secret]),  # an unknown key below the parameter
    ]


@pytest.mark.parametrize("shape", range(12))
def test_a_bad_secret_argument_is_described_without_its_value(world, caplog, shape):
    caplog.set_level(logging.DEBUG)
    secret = canary("shape")
    number = 8_765_432_000 + uuid.uuid4().int % 100_000
    name, value, leaks = _wrong_shapes(secret, number)[shape]
    arguments = {"account_id": "ACC-1001", "customer_token": "fine-token", name: value}
    if name == "customer_token":
        arguments["account_id"] = "x"  # a second, ordinary problem is reported as usual

    response = call(world["client"], "account_balance_lookup", arguments)

    assert response.status_code == 422, response.content
    error = response.json()["error"]
    problems = {p["path"]: p for p in error["details"]}
    assert name in problems, error["details"]  # the parameter is named ...
    problem = problems[name]
    assert "secret" in problem["message"] and problem["expected"]  # ... and what it should be
    assert problem["expected"] in problem["message"]
    assert all(p["path"] == name or not p["path"].startswith(name) for p in error["details"])
    if name == "customer_token":
        assert "'x'" in problems["account_id"]["message"]  # ordinary problems quote the value
        assert "string" in problem["message"] or "maxLength" in problem["message"]
    if name == "pin":
        assert "integer" in problem["message"] or "9999" in problem["message"]
    row = Execution.objects.get(pk=error["execution_id"])
    assert row.status == "invalid" and name in row.error_message and row.raw_input == ""
    assert name not in (row.input_data or {})
    assert_nowhere(world, caplog, error["execution_id"], leaks, response)


def test_a_bad_secret_argument_in_json_text_is_described_without_its_value(world, caplog):
    caplog.set_level(logging.DEBUG)
    secret = canary("jsontext")
    text = json.dumps({"account_id": "ACC-1001", "customer_token": [secret]})

    response = call(world["client"], "account_balance_lookup", text)

    assert response.status_code == 422
    error = response.json()["error"]
    assert [p["path"] for p in error["details"]] == ["customer_token"]
    assert "string" in error["details"][0]["message"]
    assert_nowhere(world, caplog, error["execution_id"], [secret], response)


# 3. Every other refusal, and admitted calls, keep the secret out too.


def _refuse(world, kind: str, arguments: dict):
    if kind == "not_found":
        return call(world["client"], "no_such_tool", arguments), 404
    if kind == "denied":
        return call(world["reader"], "account_balance_lookup", arguments), 403
    if kind == "role_not_member":
        return call(world["client"], "account_balance_lookup", arguments, role="nobody"), 403
    if kind == "inactive":
        tool_services.tool_update(actor=None, tool=world["tool"], data={"is_active": False})
        return call(world["client"], "account_balance_lookup", arguments), 409
    if kind == "rate_limited":
        limit_services.rate_limit_create(
            actor=None, tool=world["tool"], scope="agent", max_requests=1, time_window_seconds=60
        )
        first = call(world["client"], "account_balance_lookup", {**arguments, "account_id": "echo"})
        assert first.status_code in (200, 202), first.content
        return call(world["client"], "account_balance_lookup", arguments), 429
    raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind", ["not_found", "denied", "role_not_member", "inactive", "rate_limited"]
)
def test_other_refusals_keep_secrets_out(world, caplog, kind):
    caplog.set_level(logging.DEBUG)
    secret = canary(kind)
    arguments = {"account_id": "ACC-1001", "customer_token": secret}

    response, status = _refuse(world, kind, arguments)

    assert response.status_code == status, response.content
    execution_id = response.json()["error"]["execution_id"]
    row = Execution.objects.get(pk=execution_id)
    assert row.status == "denied" and row.raw_input == ""
    assert "customer_token" not in (row.input_data or {})
    caller = "reader" if kind == "denied" else "client"
    assert_nowhere(world, caplog, execution_id, [secret], response, caller=caller)


@pytest.mark.parametrize("route", ["echo", "echo-header"])
def test_admitted_calls_keep_secrets_out(world, caplog, route):
    caplog.set_level(logging.DEBUG)
    secret = canary(route)

    response = call(
        world["client"],
        "account_balance_lookup",
        {"account_id": route, "customer_token": secret},
        wait=True,
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == ("succeeded" if route == "echo" else "failed")
    assert world["upstream"].last.headers["x-customer-token"] == f"T {secret}"
    assert body["input_data"] == {"account_id": route}
    row = Execution.objects.get(pk=body["id"])
    assert row.sealed_secrets == ""
    assert_nowhere(world, caplog, body["id"], [secret], response)


def test_a_message_quoting_a_secret_anywhere_is_redacted_before_it_is_kept():
    from executions.services.pipeline import problems_without_secrets, without_secrets

    secret, number = canary("net"), 876_543_219
    arguments = {"account_id": "x", "customer_token": [secret, number, {"k": f"{secret}-k"}]}
    problems = [
        {"path": "$", "message": f"{arguments!r} is not allowed", "expected": "object"},
        {"path": "customer_token[2].k", "message": f"{secret!r} is bad", "expected": "string"},
        {"path": "customer_token[0]", "message": f"{secret!r} is too long", "expected": "string"},
        {"path": "account_id", "message": "'x' does not match", "expected": "a pattern"},
    ]

    cleaned, forms = problems_without_secrets(problems, arguments, {"customer_token"})

    assert cleaned[0]["message"] == (
        "{'account_id': 'x', 'customer_token': [REDACTED]} is not allowed"
    )
    assert cleaned[1:] == [
        {
            "path": "customer_token",
            "message": "Expected string (value not shown: secret parameter).",
            "expected": "string",
        },
        problems[3],
    ]
    for form in (secret, str(number), f"{secret}-k"):
        assert form in forms and form not in json.dumps(cleaned)
    # A secret cut through by the length limit is cut away whole, never left as a prefix.
    kept = without_secrets("y" * 1990 + secret + "z" * 50, forms, 2000)
    assert kept == "y" * 1990 + "[REDACTED]"
    kept = without_secrets(f"{secret} " * 200, forms, 2000)
    assert secret[-12:] not in kept and len(kept) <= 2000 + len("[REDACTED]")


# 4. A secret given again under another key (or inside another argument) is a secret too.


def _repeated(secret: str) -> list[tuple[str, dict]]:
    """(refusal, arguments): the secret of ``customer_token`` given again elsewhere."""
    import base64
    from urllib.parse import quote

    encoded = base64.b64encode(secret.encode()).decode()
    return [
        ("invalid", {"extra": secret}),  # an unknown key
        ("invalid", {"extra": {"deep": [1, {"x": f"say {secret} twice"}]}}),  # nested, inside text
        ("invalid", {secret: "value"}),  # as a key
        ("invalid", {"extra": quote(f"{secret}/+", safe="")}),  # URL-encoded
        ("invalid", {"extra": encoded}),  # base64
        ("invalid", {"extra": secret.lower()}),  # re-cased
        ("invalid", {"note": secret, "account_id": "!"}),  # a known argument, another problem
        ("rate_limited", {"note": secret}),  # a valid call refused later
        ("rate_limited", {"note": f"Bearer {secret.upper()}"}),
    ]


@pytest.mark.parametrize("shape", range(9))
def test_a_secret_given_again_under_another_key_is_not_kept_on_the_refusal(world, caplog, shape):
    caplog.set_level(logging.DEBUG)
    secret = canary("again")
    token = secret + "/+"  # characters a URL encoding changes
    kind, more = _repeated(token)[shape]
    arguments = {"account_id": "ACC-1001", "customer_token": token, **more}

    if kind == "rate_limited":
        limit_services.rate_limit_create(
            actor=None, tool=world["tool"], scope="agent", max_requests=1, time_window_seconds=60
        )
        first = call(
            world["client"],
            "account_balance_lookup",
            {"account_id": "echo", "customer_token": token},
        )
        assert first.status_code in (200, 202), first.content
        response, status = call(world["client"], "account_balance_lookup", arguments), 429
    else:
        response, status = call(world["client"], "account_balance_lookup", arguments), 422

    assert response.status_code == status, response.content
    execution_id = response.json()["error"]["execution_id"]
    row = Execution.objects.get(pk=execution_id)
    assert row.status == ("invalid" if kind == "invalid" else "denied")
    assert row.input_data["account_id"] == arguments["account_id"]  # the rest is kept
    assert "[REDACTED]" in json.dumps(row.input_data)  # and where the secret was is said
    leaks = [secret, secret.lower(), secret.upper(), secret[8:]]
    assert_nowhere(world, caplog, execution_id, leaks, response)


# 5. An admitted call: what the record keeps is masked, what the tool receives is not.


@pytest.mark.parametrize("shape", ["whole", "inside text", "re-cased", "base64"])
def test_a_per_call_secret_repeated_in_a_plain_argument_is_stored_masked_while_the_tool_gets_it(
    world, caplog, shape
):
    import base64

    caplog.set_level(logging.DEBUG)
    secret = canary("plain")
    note = {
        "whole": secret,
        "inside text": f"my token is {secret}, keep it",
        "re-cased": secret.upper(),
        "base64": base64.b64encode(secret.encode()).decode(),
    }[shape]

    response = call(
        world["client"],
        "account_balance_lookup",
        {"account_id": "echo", "customer_token": secret, "note": note},
        wait=True,
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "succeeded", body
    received = world["upstream"].last
    assert received.headers["x-customer-token"] == f"T {secret}"
    assert received.query["note"] == [note]  # the real value, not the record's
    assert body["input_data"]["account_id"] == "echo"
    assert "[REDACTED]" in body["input_data"]["note"]
    row = Execution.objects.get(pk=body["id"])
    assert row.input_data == body["input_data"] and row.sealed_secrets == ""
    assert_nowhere(world, caplog, body["id"], [secret, secret.upper(), note], response)
    # The record, its content hash and its audit events still verify as written.
    from registry.services.audit_chain import audit_verify

    report = audit_verify()
    assert report.ok, report.problem


def test_a_call_waiting_for_approval_seals_the_real_value_of_a_masked_argument(world):
    from executions.services.sealed_inputs import sealed_read

    tool_services.tool_update(actor=None, tool=world["tool"], data={"requires_approval": True})
    secret = canary("waiting")
    with_secret = {"account_id": "echo", "customer_token": secret, "note": f"re {secret}"}

    response = call(world["client"], "account_balance_lookup", with_secret)

    assert response.status_code == 202, response.content
    row = Execution.objects.get(pk=response.json()["id"])
    assert row.status == "pending_approval"
    assert row.input_data == {"account_id": "echo", "note": "re [REDACTED]"}
    sealed = sealed_read(row.sealed_secrets)
    assert sealed.secrets == {"customer_token": secret}
    assert sealed.inputs(row.input_data) == with_secret  # what the runner will call with
