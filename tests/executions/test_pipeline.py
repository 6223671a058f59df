"""execution_request end to end through the API (tasks in-process; the worker tests use a real one)."""

from __future__ import annotations

import hashlib
import json
import time

import pytest
from django.core.files.storage import default_storage

from executions.jsonsafe import json_safe
from executions.models import Execution
from registry.models import AuditEvent
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.conftest import token_client

pytestmark = [pytest.mark.django_db(transaction=True)]

CANARY = "canary-secret-7f3e1d"
PER_CALL = "per-call-secret-9a8b7c"


@pytest.fixture
def world(upstream, allow_loopback, eager_tasks, owner):
    role = role_services.role_create(actor=None, name="callers")
    readers = role_services.role_create(actor=None, name="readers")
    agent = agent_services.agent_create(
        actor=None, name="agent-x", owner=owner, role_ids=[role.pk, readers.pk]
    )
    reader = agent_services.agent_create(
        actor=None, name="agent-r", owner=owner, role_ids=[readers.pk]
    )
    tool = tool_services.tool_create(
        actor=None,
        name="echo_tool",
        type="http",
        max_retries=2,
        timeout_seconds=5,
        tool_metadata={"cost_per_call": "0.0025"},
        parameters=[
            {"name": "path", "type": "string", "required": True},
            {"name": "count", "type": "integer", "default": 1, "json_schema": {"minimum": 1}},
            {"name": "token", "type": "string"},
            {
                "name": "filters",
                "type": "object",
                "json_schema": {
                    "properties": {"kind": {"type": "string", "enum": ["a", "b"]}},
                    "required": ["kind"],
                    "additionalProperties": False,
                },
            },
        ],
        configs=[
            {"config_key": "base_url", "config_value": upstream.url},
            {"config_key": "endpoint", "config_value": "/{path}"},
            {"config_key": "auth_type", "config_value": "bearer_token"},
            {"config_key": "bearer_token", "config_value": CANARY, "is_secret": True},
            {
                "config_key": "headers_input_map",
                "config_value": {"token": {"header": "X-Token", "template": "T {value}"}},
            },
        ],
    )
    grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    grant_services.grant_create(actor=None, role=readers, action="read", tool=tool)
    return {
        "client": token_client(agent.user),
        "reader": token_client(reader.user),
        "agent": agent,
        "tool": tool,
        "role": role,
        "readers": readers,
        "upstream": upstream,
    }


def run(client, **body):
    return client.post("/api/v1/executions", body, format="json")


def test_wait_returns_the_result_and_records_everything(world):
    response = run(
        world["client"],
        tool_id=str(world["tool"].pk),
        input_data={"path": "echo", "count": "3", "token": PER_CALL},
        wait=True,
        agent_id="someone-else",
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["status"] == "succeeded"
    assert body["tool_name"] == "echo_tool" and body["agent_id"] == str(world["agent"].pk)
    assert (body["entry_point"], body["client_name"], body["protocol_version"]) == ("api", "", "")
    assert body["input_data"] == {"path": "echo", "count": 3}  # coerced, secret removed
    assert body["output_data"]["status_code"] == 200
    sent = world["upstream"].last
    assert sent.headers["authorization"] == f"Bearer {CANARY}"
    assert sent.headers["x-token"] == f"T {PER_CALL}"
    assert sent.query == {"count": ["3"]}
    execution = Execution.objects.get(pk=body["id"])
    assert execution.attempts == 1 and execution.execution_time_ms > 0
    # The role that granted execute, not every role of the agent (readers only reads).
    assert execution.roles_used == ["callers"]
    assert str(execution.cost) == "0.002500" and execution.chars_in > 0 and execution.chars_out > 0
    assert execution.sealed_secrets == "" and len(execution.input_hash) == 64
    actions = list(
        AuditEvent.objects.filter(target_id=body["id"])
        .order_by("id")
        .values_list("action", flat=True)
    )
    # A waiting HTTP call runs in the web process (TOOLHUB_INLINE_WAIT's default):
    # admitted and started in one durable write, then finished.
    assert actions == ["execution.running", "execution.succeeded"]
    assert execution.worker and execution.started_at == execution.queued_at
    # The canary and the per-call secret appear nowhere.
    for leak in (CANARY, PER_CALL):
        assert leak not in json.dumps(body)
        row = Execution.objects.filter(pk=body["id"]).values().get()
        assert leak not in json.dumps(row, default=str)
        assert leak not in json.dumps(list(AuditEvent.objects.values()), default=str)


def test_without_wait_answers_202_and_polling_shows_the_result(world, eager_tasks):
    eager_tasks.conf.task_always_eager = False  # nothing consumes the queue in this test
    response = run(world["client"], tool="echo_tool", input_data={"path": "echo"})
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "queued" and body["links"]["self"].endswith(body["id"])
    from executions.services.runner import execution_run

    execution_run(execution_id=body["id"])
    polled = world["client"].get(f"/api/v1/executions/{body['id']}").json()
    assert polled["status"] == "succeeded"
    assert execution_run(execution_id=body["id"]) is None  # a second task does nothing


@pytest.mark.parametrize("wait", [None, False, 0])
def test_embedded_mode_answers_with_what_the_call_became(world, eager_tasks, wait):
    # In-process tasks (the embedded default) run the call before the answer is
    # written: the answer is the finished call, never a stale "queued".
    extra = {} if wait is None else {"wait": wait}
    response = run(world["client"], tool="echo_tool", input_data={"path": "echo"}, **extra)
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "succeeded"
    assert response.json()["output_data"]["status_code"] == 200


def test_broker_down_the_call_is_refused_503_and_ends_failed_never_to_run(
    world, eager_tasks, monkeypatch
):
    # The row is committed before the publish; it ends failed, so neither the reaper
    # nor a message that reached the broker after all runs it: the caller may retry.
    from kombu.exceptions import OperationalError

    from executions.services.runner import execution_run, executions_reap
    from executions.tasks import run_execution

    def broker_down(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6399. Connection refused.")

    eager_tasks.conf.task_always_eager = False
    monkeypatch.setattr(run_execution, "apply_async", broker_down)
    response = run(world["client"], tool="echo_tool", input_data={"path": "echo"})
    assert response.status_code == 503, response.content
    assert response.json()["error"]["code"] == "queue_unavailable"
    execution = Execution.objects.get(pk=response.json()["error"]["execution_id"])
    assert (execution.status, execution.error_type) == ("failed", "queue_unavailable")
    assert AuditEvent.objects.filter(
        action="execution.failed", target_id=str(execution.pk)
    ).exists()
    assert executions_reap()["requeued"] == 0
    assert execution_run(execution_id=execution.pk) is None
    assert world["upstream"].requests == []


def test_arguments_as_json_text_are_parsed(world):
    response = run(world["client"], tool="echo_tool", input_data='{"path": "echo"}', wait=True)
    assert response.status_code == 200 and response.json()["status"] == "succeeded"


def test_unparseable_arguments_keep_the_raw_text(world):
    plain = tool_services.tool_create(
        actor=None,
        name="plain_tool",
        type="http",
        parameters=[{"name": "path", "type": "string", "required": True}],
        configs=[{"config_key": "base_url", "config_value": world["upstream"].url}],
    )
    grant_services.grant_create(actor=None, role=world["role"], action="execute", tool=plain)
    response = run(world["client"], tool="plain_tool", input_data='{"path": "echo"', wait=True)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["details"][0]["path"] == "$" and "not valid JSON" in error["details"][0]["message"]
    execution = Execution.objects.get(pk=error["execution_id"])
    assert execution.status == "invalid" and execution.raw_input == '{"path": "echo"'


def test_unparseable_arguments_of_a_tool_with_secret_parameters_are_not_kept(world):
    # echo_tool has a secret parameter: broken text may hold its value anywhere.
    response = run(world["client"], tool="echo_tool", input_data='{"path": "echo"', wait=True)
    assert response.status_code == 422
    execution = Execution.objects.get(pk=response.json()["error"]["execution_id"])
    assert execution.status == "invalid"
    assert execution.raw_input == "[not kept: the tool has secret parameters]"


def test_every_problem_is_reported_with_path_and_expected(world):
    response = run(
        world["client"],
        tool="echo_tool",
        input_data={"count": "many", "extra": 1, "filters": {"kind": "z", "more": True}},
    )
    assert response.status_code == 422
    error = response.json()["error"]
    problems = {d["path"]: d for d in error["details"]}
    assert set(problems) == {"path", "count", "extra", "filters.kind", "filters.more"}
    assert problems["count"]["expected"] == "integer"
    assert problems["filters.kind"]["expected"] == 'one of "a", "b"'
    assert "Unknown argument 'extra'" in problems["extra"]["message"]
    assert problems["path"]["message"] == "Missing required argument 'path'."
    assert error["code"] == "invalid_arguments" and "5 problems" in error["message"]
    assert world["upstream"].requests == []
    assert AuditEvent.objects.filter(action="execution.invalid").count() == 1


def test_refusals_are_recorded(world):
    client, reader, tool = world["client"], world["reader"], world["tool"]
    missing = run(client, tool="nope", input_data={})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "tool_not_found"
    forbidden = run(reader, tool="echo_tool", input_data={"path": "echo"})
    assert forbidden.status_code == 403
    wrong_role = run(client, tool="echo_tool", input_data={"path": "echo"}, role_id="admins")
    assert wrong_role.status_code == 403 and wrong_role.json()["error"]["code"] == "role_not_member"
    narrowed = run(
        client, tool="echo_tool", input_data={"path": "echo"}, role_id=str(world["readers"].pk)
    )
    assert narrowed.status_code == 403  # the readers role alone may not execute
    ok = run(client, tool="echo_tool", input_data={"path": "echo"}, role="callers", wait=True)
    assert ok.status_code == 200 and ok.json()["role_id"] == world["role"].pk
    tool_services.tool_deactivate(actor=None, tool=tool)
    inactive = run(client, tool="echo_tool", input_data={"path": "echo"})
    assert inactive.status_code == 409
    reasons = list(Execution.objects.order_by("created_at").values_list("status", "reason_code"))
    assert reasons == [
        ("denied", "tool_not_found"),
        ("denied", "permission_denied"),
        ("denied", "role_not_member"),
        ("denied", "permission_denied"),
        ("succeeded", ""),
        ("denied", "tool_inactive"),
    ]
    assert AuditEvent.objects.filter(action="execution.denied").count() == 5
    for response in (missing, forbidden, wrong_role, inactive):
        assert Execution.objects.filter(pk=response.json()["error"]["execution_id"]).exists()
    # A refusal names the tool whenever the caller may read it, the wrong role included.
    tools = dict(Execution.objects.values_list("reason_code", "tool_id").exclude(reason_code=""))
    assert tools["role_not_member"] == tool.pk and tools["tool_not_found"] is None
    # A refusal is decided and finished at one moment: it never ends before it began.
    for created, finished in Execution.objects.exclude(reason_code="").values_list(
        "created_at", "finished_at"
    ):
        assert finished == created


def test_a_call_stopped_before_it_reached_the_tool_costs_nothing(world):
    tool_services.config_set(
        actor=None, tool=world["tool"], config_key="base_url", config_value="http://10.255.0.1"
    )
    body = run(world["client"], tool="echo_tool", input_data={"path": "echo"}, wait=True).json()
    assert body["status"] == "failed" and body["error_type"] == "egress_denied"
    assert Execution.objects.get(pk=body["id"]).cost == 0  # cost_per_call is 0.0025


def test_upstream_4xx_is_a_failed_execution_with_status(world):
    response = run(world["client"], tool="echo_tool", input_data={"path": "status/404"}, wait=True)
    body = response.json()
    assert body["status"] == "failed" and body["error_type"] == "upstream_error"
    assert body["upstream_status"] == 404 and body["attempts"] == 1


def test_retries_idempotent_5xx_up_to_max_retries(world):
    world["upstream"].reset()
    tool = world["tool"]
    tool_services.config_set(
        actor=None, tool=tool, config_key="endpoint", config_value="/attempts/k2"
    )
    tool_services.config_set(
        actor=None, tool=tool, config_key="query_params", config_value={"fail": "2"}
    )
    body = run(world["client"], tool="echo_tool", input_data={"path": "x"}, wait=True).json()
    assert body["status"] == "succeeded", (body["error_type"], body["error_message"])
    assert body["attempts"] == 3 and world["upstream"].attempts["k2"] == 3
    tool_services.config_set(
        actor=None, tool=tool, config_key="query_params", config_value={"fail": "9"}
    )
    body = run(world["client"], tool="echo_tool", input_data={"path": "x"}, wait=True).json()
    assert body["status"] == "failed" and body["attempts"] == 3  # 1 + max_retries


def test_a_long_retry_after_stops_the_retries_and_is_reported(world):
    """429 with Retry-After: 3600 is not hammered three more times in a second."""
    tool = world["tool"]
    tool_services.config_set(
        actor=None, tool=tool, config_key="query_params", config_value={"retry_after": "3600"}
    )
    tool_services.config_set(
        actor=None, tool=tool, config_key="endpoint", config_value="/status/429"
    )
    started = time.monotonic()
    body = run(world["client"], tool="echo_tool", input_data={"path": "x"}, wait=True)
    body = body.json()
    assert body["status"] == "failed" and body["attempts"] == 1
    assert "retry after 3600 s" in body["error_message"]
    assert time.monotonic() - started < 5


def test_large_output_is_capped_and_kept_as_artifact(world):
    tool = world["tool"]
    tool_services.tool_update(actor=None, tool=tool, data={"max_response_bytes": 1024})
    tool_services.config_set(
        actor=None, tool=tool, config_key="query_params", config_value={"size": "5000"}
    )
    body = run(world["client"], tool="echo_tool", input_data={"path": "large"}, wait=True).json()
    assert body["status"] == "succeeded"
    assert body["output_truncated"] is True and "output" in body["links"]
    assert body["output_data"]["truncated"] is True
    assert len(json.dumps(body["output_data"])) < 1400
    full = world["client"].get(f"/api/v1/executions/{body['id']}/output")
    assert full.status_code == 200
    data = json.loads(b"".join(full.streaming_content))
    assert data["status_code"] == 200 and data["data"] == "x" * 5000
    execution = Execution.objects.get(pk=body["id"])
    assert default_storage.exists(execution.output_artifact) and execution.output_size > 5000
    # Another agent cannot read it.
    assert world["reader"].get(f"/api/v1/executions/{body['id']}/output").status_code == 404
    # The record holds the full output's digest (so does the audit chain, through the
    # record's content hash): an artifact altered on disk is refused, not served.
    stored = default_storage.open(execution.output_artifact, "rb").read()
    assert body["output_data"]["sha256"] == hashlib.sha256(stored).hexdigest()
    assert body["output_data"]["complete"] is True
    path = default_storage.path(execution.output_artifact)
    with open(path, "wb") as handle:
        handle.write(stored.replace(b"xxxxx", b"TAMPR", 1))
    altered = world["client"].get(f"/api/v1/executions/{body['id']}/output")
    assert altered.status_code == 409 and altered.json()["error"]["code"] == "output_altered"
    # One deleted behind ToolHub's back is a 409 saying so, not a 500.
    default_storage.delete(execution.output_artifact)
    gone = world["client"].get(f"/api/v1/executions/{body['id']}/output")
    assert gone.status_code == 409 and gone.json()["error"]["code"] == "output_gone"


def test_a_broken_secret_config_is_never_quoted_in_the_error(world):
    """Stored before configs were checked at save: the run-time error names the key only."""
    from registry.models import ToolConfig

    secret = "sk_live_" + "B" * 70  # longer than an error's quotation: cut, it would escape
    tool_services.config_set(
        actor=None,
        tool=world["tool"],
        config_key="base_url",
        config_value="https://x.example",
        is_secret=True,
    )
    config = ToolConfig.objects.get(tool=world["tool"], config_key="base_url")
    config.set_value(secret)
    config.save()
    body = run(world["client"], tool="echo_tool", input_data={"path": "echo"}, wait=True).json()
    assert body["status"] == "failed" and body["error_type"] == "config_error"
    assert "base_url" in body["error_message"] and "sk_live_B" not in body["error_message"]


def test_a_secret_urls_own_secret_parts_are_redacted_where_echoed(world):
    """A secret endpoint whose query holds a key: an upstream echoing its path and
    query returned the key, which was no whole secret value and escaped redaction."""
    key = "CANARY_URLKEY_4471"
    tool_services.config_set(
        actor=None,
        tool=world["tool"],
        config_key="endpoint",
        config_value=f"/echo?key={key}&region=eu",
        is_secret=True,
    )
    body = run(world["client"], tool="echo_tool", input_data={"path": "echo"}, wait=True).json()
    assert body["status"] == "succeeded", (body["error_type"], body["error_message"])
    assert world["upstream"].requests[-1].query["key"] == [key]  # the upstream got it
    stored = Execution.objects.get(pk=body["id"])
    assert key not in json.dumps(body) and key not in json.dumps(stored.output_data)
    assert "[REDACTED]" in json.dumps(body["output_data"])


def test_a_secret_echoed_base64_encoded_never_reaches_the_record(world):
    import base64

    key = "CANARY_B64KEY_90210"
    for config_key, value in (("auth_type", "api_key"), ("endpoint", "/echo-encoded/X-API-Key")):
        tool_services.config_set(
            actor=None, tool=world["tool"], config_key=config_key, config_value=value
        )
    tool_services.config_set(
        actor=None, tool=world["tool"], config_key="api_key", config_value=key, is_secret=True
    )
    body = run(world["client"], tool="echo_tool", input_data={"path": "echo"}, wait=True).json()
    assert body["status"] == "succeeded", (body["error_type"], body["error_message"])
    stored = json.dumps(Execution.objects.get(pk=body["id"]).output_data)
    for text in (json.dumps(body), stored):
        assert key not in text and key.lower() not in text
        assert base64.b64encode(key.encode()).decode().rstrip("=") not in text
        assert base64.b64encode(b"user:" + key.encode()).decode() not in text


def test_encoded_forms_of_short_secrets_stay_narrow():
    from executions.redaction import with_encoded_forms

    assert with_encoded_forms(["abc"]) == ["abc"]  # too short to be looked for encoded
    eight = with_encoded_forms(["Pa55word"])
    assert "pa55word" not in eight and "PA55WORD" not in eight  # re-cased only from 12
    assert "UGE1NXdvcmQ=" in eight and "UGE1NXdvcmQ" in eight
    long = with_encoded_forms(["Token-4f8a9b2c7d"])
    assert "token-4f8a9b2c7d" in long and "TOKEN-4F8A9B2C7D" in long


def test_secret_parts_of_urls_and_connection_strings():
    from executions.redaction import secret_parts

    url = "https://u:pa55word-9@api.example/v1/items?key=k_1234567890&format=application/json"
    assert secret_parts(url) == ["k_1234567890", "pa55word-9"]
    dsn = "postgresql://readerusr:pw-secret-77@db.example/reporting?sslmode=verify-full"
    assert secret_parts(dsn) == ["pw-secret-77", "readerusr"]
    assert secret_parts("host=db port=5432 dbname=reporting password=longpassword1") == [
        "longpassword1"
    ]
    # Ordinary words of a path or a query are not secrets of their own: outputs keep them.
    assert secret_parts("https://api.example.com/v1/transactions?sort=relevance") == []
    hook = "https://hooks.example/services/T0000000/B0000000/XXXXXXXXXXXXXXXXXXXXXXX1"
    assert secret_parts(hook) == ["XXXXXXXXXXXXXXXXXXXXXXX1"]


def test_an_output_past_the_artifact_cap_says_the_artifact_is_incomplete(world, settings):
    tool = world["tool"]
    settings.TOOLHUB_MAX_ARTIFACT_BYTES = 3000
    tool_services.tool_update(actor=None, tool=tool, data={"max_response_bytes": 1024})
    tool_services.config_set(
        actor=None, tool=tool, config_key="query_params", config_value={"size": "5000"}
    )
    body = run(world["client"], tool="echo_tool", input_data={"path": "large"}, wait=True).json()
    assert body["status"] == "succeeded" and body["output_truncated"] is True
    assert body["output_data"]["complete"] is False  # not only the row: the artifact too
    stored = default_storage.open(Execution.objects.get(pk=body["id"]).output_artifact).read()
    assert len(stored) <= 3000
    assert body["output_data"]["sha256"] == hashlib.sha256(stored).hexdigest()


def test_artifact_store_failure_ends_the_call_failed_at_once(world, monkeypatch):
    tool = world["tool"]
    tool_services.tool_update(actor=None, tool=tool, data={"max_response_bytes": 1024})
    tool_services.config_set(
        actor=None, tool=tool, config_key="query_params", config_value={"size": "5000"}
    )

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(default_storage, "save", full_disk)
    body = run(world["client"], tool="echo_tool", input_data={"path": "large"}, wait=True).json()
    # Not left running for the reaper: failed now, with the preview and no broken link.
    assert body["status"] == "failed" and body["error_type"] == "storage_error"
    assert "could not be stored" in body["error_message"]
    assert body["output_truncated"] is True and body["output_data"]["size_bytes"] > 5000
    assert "output" not in body["links"]
    execution = Execution.objects.get(pk=body["id"])
    assert execution.finished_at is not None and not execution.output_artifact


@pytest.mark.parametrize("ref", ["\u0661", "99999999999999999999999", "0"])
def test_a_role_reference_that_is_no_id_of_the_callers_is_refused(world, ref):
    """Digits of other scripts are not ASCII ids (int('\u0661') is 1), and ids past any
    column's range are names: either way, no role of the caller's, so 403."""
    response = run(world["client"], tool="echo_tool", input_data={"path": "echo"}, role_id=ref)
    assert response.status_code == 403, response.content
    assert response.json()["error"]["code"] == "role_not_member"


def test_output_of_a_call_without_output_is_a_404_naming_its_status(world):
    response = run(world["client"], tool="echo_tool", input_data={}, wait=True)
    assert response.status_code == 422
    execution_id = response.json()["error"]["execution_id"]
    answer = world["client"].get(f"/api/v1/executions/{execution_id}/output")
    assert answer.status_code == 404 and answer["Content-Type"] == "application/json"
    error = answer.json()["error"]
    assert error["code"] == "no_output" and "(status: invalid)" in error["message"]
    # A small output is answered as JSON.
    body = run(world["client"], tool="echo_tool", input_data={"path": "echo"}, wait=True).json()
    small = world["client"].get(f"/api/v1/executions/{body['id']}/output")
    assert small.status_code == 200 and small.json()["status_code"] == 200


def test_listing_filters_and_visibility(world, staff_client):
    client = world["client"]
    for path in ("echo", "status/500"):
        run(client, tool="echo_tool", input_data={"path": path}, wait=True)
    run(client, tool="echo_tool", input_data={})
    mine = client.get("/api/v1/executions").json()
    assert len(mine["results"]) == 3 and mine["next"] is None
    failed = client.get("/api/v1/executions?status=failed").json()["results"]
    assert [e["input_data"]["path"] for e in failed] == ["status/500"]
    assert len(client.get("/api/v1/executions?status=succeeded,invalid").json()["results"]) == 2
    assert client.get("/api/v1/executions?status=done").status_code == 400
    assert client.get("/api/v1/executions?created_after=yesterday").status_code == 400
    assert client.get("/api/v1/executions?tool_id=x").status_code == 400
    page = client.get("/api/v1/executions?page_size=2").json()
    assert len(page["results"]) == 2 and page["next"]
    rest = client.get(page["next"]).json()
    assert len(rest["results"]) == 1
    by_tool = client.get(f"/api/v1/executions/tool/{world['tool'].pk}").json()
    assert len(by_tool["results"]) == 3
    # Another agent sees none of them; a platform admin sees all.
    assert world["reader"].get("/api/v1/executions").json()["results"] == []
    assert (
        len(staff_client.get(f"/api/v1/executions?agent_id={world['agent'].pk}").json()["results"])
        == 3
    )


def test_request_errors_name_the_field(world):
    client = world["client"]
    assert run(client, input_data={}).json()["error"]["details"][0]["field"] == "tool_id"
    both = run(client, tool="a", tool_id="b")
    assert both.json()["error"]["details"][0]["field"] == "tool"
    bad_wait = run(client, tool="echo_tool", wait="soon")
    assert bad_wait.status_code == 400 and bad_wait.json()["error"]["details"][0]["field"] == "wait"
    unknown = run(client, tool="echo_tool", inputs={})
    assert unknown.status_code == 400 and unknown.json()["error"]["details"][0]["field"] == "inputs"


def test_cancel_a_queued_call(world, eager_tasks):
    eager_tasks.conf.task_always_eager = False
    body = run(world["client"], tool="echo_tool", input_data={"path": "echo"}).json()
    cancelled = world["client"].post(f"/api/v1/executions/{body['id']}/cancel")
    assert cancelled.json()["status"] == "cancelled"
    again = world["client"].post(f"/api/v1/executions/{body['id']}/cancel")
    assert again.status_code == 409


def test_egress_refusal_is_a_failed_execution(world, settings):
    settings.TOOLHUB_EGRESS_ALLOW = []
    body = run(world["client"], tool="echo_tool", input_data={"path": "echo"}, wait=True).json()
    assert body["status"] == "failed" and body["error_type"] == "egress_denied"
    assert body["attempts"] == 1


def test_secrets_never_reach_the_logs(world, caplog):
    import logging

    caplog.set_level(logging.DEBUG)
    run(
        world["client"], tool="echo_tool", input_data={"path": "echo", "token": PER_CALL}, wait=True
    )
    run(
        world["client"],
        tool="echo_tool",
        input_data={"path": "status/500", "token": PER_CALL},
        wait=True,
    )
    run(
        world["client"],
        tool="echo_tool",
        input_data={"path": "echo", "count": "x", "token": PER_CALL},
    )
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert caplog.records  # something was logged at DEBUG
    assert CANARY not in logged and PER_CALL not in logged


def test_without_inline_wait_a_waiting_call_is_queued_first(world, settings):
    settings.TOOLHUB_INLINE_WAIT = frozenset()
    body = run(world["client"], tool="echo_tool", input_data={"path": "echo"}, wait=True).json()
    assert body["status"] == "succeeded"
    actions = list(
        AuditEvent.objects.filter(target_id=body["id"])
        .order_by("id")
        .values_list("action", flat=True)
    )
    assert actions == ["execution.queued", "execution.succeeded"]


def test_an_inline_call_at_its_concurrency_limit_queues_instead(world, eager_tasks, settings):
    from executions.services.shared_state import slot_acquire, slot_release

    if not settings.REDIS_URL:
        pytest.skip("concurrency slots live in Redis (set REDIS_URL)")
    tool = world["tool"]
    tool_services.tool_update(
        actor=None, tool=tool, data={"max_concurrency": 1, "timeout_seconds": 1, "max_retries": 0}
    )
    eager_tasks.conf.task_always_eager = False  # nothing consumes the queue here
    key = f"toolhub:slots:tool:{tool.pk}"
    assert slot_acquire(key, "someone-else", 1, 60)
    try:
        body = run(world["client"], tool="echo_tool", input_data={"path": "echo"}, wait=True).json()
    finally:
        slot_release(key, "someone-else")
    assert body["status"] == "queued"  # handed to the workers, not run past the limit
    assert world["upstream"].requests == []


def test_a_wait_shorter_than_the_tool_budget_goes_to_the_workers(world, eager_tasks):
    # Running here would hold the caller past the wait it asked for.
    eager_tasks.conf.task_always_eager = False  # nothing consumes the queue here
    response = run(world["client"], tool="echo_tool", input_data={"path": "echo"}, wait=0.2)
    assert response.status_code == 202 and response.json()["status"] == "queued"
    assert world["upstream"].requests == []


def test_inline_wait_runs_in_the_web_process_without_a_worker(world, eager_tasks, settings):
    eager_tasks.conf.task_always_eager = False  # no worker consumes the queue here
    settings.TOOLHUB_INLINE_WAIT = {"http"}
    body = run(world["client"], tool="echo_tool", input_data={"path": "echo"}, wait=True).json()
    assert body["status"] == "succeeded" and body["output_data"]["status_code"] == 200
    # Without wait the call still goes to the queue.
    queued = run(world["client"], tool="echo_tool", input_data={"path": "echo"}).json()
    assert queued["status"] == "queued"
    actions = list(
        AuditEvent.objects.filter(target_id=body["id"])
        .order_by("id")
        .values_list("action", flat=True)
    )
    # Admitted and started in one durable write, then finished.
    assert actions == ["execution.running", "execution.succeeded"]


@pytest.mark.parametrize("inline", [True, False])
def test_each_audit_event_hashes_the_row_as_stored(world, settings, inline):
    from executions.services.execution_audit import execution_content_hash

    settings.TOOLHUB_INLINE_WAIT = frozenset({"http"} if inline else ())
    # A cost finer than the column's scale: hashed as the row stores it.
    tool_services.tool_update(
        actor=None, tool=world["tool"], data={"tool_metadata": {"cost_per_call": "0.12345678"}}
    )
    body = run(
        world["client"], tool="echo_tool", input_data={"path": "echo", "count": 2}, wait=True
    ).json()
    assert body["status"] == "succeeded"
    stored = Execution.objects.get(pk=body["id"])
    last = AuditEvent.objects.filter(target_id=body["id"]).order_by("-id").first()
    assert last.action == "execution.succeeded"
    assert last.after["content_hash"] == execution_content_hash(stored)


def test_text_no_record_can_hold_is_refused_or_mended_never_a_500(world, upstream):
    # In the caller's arguments: a 422 naming the argument, and the refusal recorded.
    response = run(world["client"], tool="echo_tool", input_data={"path": "ec\x00ho"}, wait=True)
    assert response.status_code == 422
    assert [e["path"] for e in response.json()["error"]["details"]] == ["path"]
    refused = Execution.objects.get(pk=response.json()["error"]["execution_id"])
    assert refused.status == "invalid" and "\x00" not in refused.input_data["path"]
    response = run(world["client"], tool="echo_tool", input_data='{"path": "\\ud800"}', wait=True)
    assert response.status_code == 422
    # In a tool name: a 400 (not a database error).
    assert run(world["client"], tool="echo\x00", input_data={}).status_code == 400
    # In an upstream answer or error: recorded with U+FFFD in place.
    from executions.executors.base import ExecutorResult
    from executions.services.runner.finish import finish

    tool = world["tool"]
    for result in (
        ExecutorResult(ok=True, output={"data": "a\x00b", "k\x00": "\ud800"}),
        ExecutorResult(ok=False, error_type="upstream_error", error_message="boom\x00 \udfff"),
    ):
        execution = Execution.objects.create(tool=tool, tool_name=tool.name, status="running")
        result.output = json_safe(result.output)  # as the runner prepares every output
        finish(execution, tool, result, 1, 1.0)
        stored = Execution.objects.get(pk=execution.pk)
        if result.ok:
            assert stored.output_data == {"data": "a\ufffdb", "k\ufffd": "\ufffd"}
        else:
            assert stored.error_message == "boom\ufffd \ufffd"


@pytest.mark.parametrize("value", [1e16, -0.0, 1.5e-7, 12345678901234567890, 1.0])
def test_the_content_hash_of_an_output_is_the_stored_rows(world, value):
    from executions.executors.base import ExecutorResult
    from executions.services.execution_audit import execution_content_hash
    from executions.services.runner.finish import finish

    tool = world["tool"]
    execution = Execution.objects.create(tool=tool, tool_name=tool.name, status="running")
    finish(execution, tool, ExecutorResult(ok=True, output={"v": value, "l": [value]}), 1, 1.0)
    stored = Execution.objects.get(pk=execution.pk)
    event = AuditEvent.objects.filter(target_id=str(execution.pk)).order_by("-id").first()
    assert event.after["content_hash"] == execution_content_hash(stored)


def test_an_idempotency_key_makes_a_retry_answer_the_first_call(world):
    client, upstream = world["client"], world["upstream"]
    body = {"tool": "echo_tool", "input_data": {"path": "echo"}, "wait": True}

    def post(key, data=body):
        return client.post("/api/v1/executions", data, format="json", HTTP_IDEMPOTENCY_KEY=key)

    first = post("order-7781")
    assert first.status_code == 200, first.content
    before = len(upstream.requests)
    again = post("order-7781")
    assert again.status_code == 200 and again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert len(upstream.requests) == before  # the tool did not run twice
    assert Execution.objects.filter(tool_name="echo_tool").count() == 1
    # The same key with other arguments is a client error, not a silent replay.
    other = post("order-7781", {**body, "input_data": {"path": "other"}})
    assert other.status_code == 400
    assert other.json()["error"]["code"] == "idempotency_key_reused"
    # A refused call frees its key for the corrected request.
    refused = post("order-7782", {**body, "input_data": {"path": "echo", "count": "x"}})
    assert refused.status_code == 422
    assert post("order-7782").status_code == 200
    # Keys are per caller; a malformed key is named.
    assert (
        world["reader"]
        .post("/api/v1/executions", body, format="json", HTTP_IDEMPOTENCY_KEY="order-7781")
        .status_code
        == 403
    )
    bad = post("spaces are not allowed")
    assert bad.status_code == 400 and "Idempotency-Key" in bad.json()["error"]["message"]
    # How long the retry waits is not part of the call: it still replays; nor is
    # sending the arguments as JSON text instead of an object.
    patient = post("order-7781", {**body, "wait": 30})
    assert patient.status_code == 200 and patient.json()["id"] == first.json()["id"]
    as_text = post("order-7781", {**body, "input_data": json.dumps(body["input_data"])})
    assert as_text.status_code == 200 and as_text.json()["id"] == first.json()["id"]


def test_without_the_shared_cache_a_keyed_request_is_refused_not_run(world, monkeypatch):
    from django.core.cache import cache

    def down(*args, **kwargs):
        raise ConnectionError("cache unreachable")

    monkeypatch.setattr(cache, "add", down)
    before = Execution.objects.count()
    body = {"tool": "echo_tool", "input_data": {"path": "echo"}, "wait": True}
    response = world["client"].post(
        "/api/v1/executions", body, format="json", HTTP_IDEMPOTENCY_KEY="order-9"
    )
    assert response.status_code == 503, response.content
    assert response.json()["error"]["code"] == "idempotency_unavailable"
    assert Execution.objects.count() == before and world["upstream"].requests == []
    # Without the key the call runs.
    assert world["client"].post("/api/v1/executions", body, format="json").status_code == 200


def test_a_key_whose_first_request_is_still_deciding_answers_409(world):
    import hashlib as _hashlib

    from django.core.cache import cache

    digest = _hashlib.sha256(b"busy-key").hexdigest()
    user = world["agent"].user
    body = {"tool": "echo_tool", "input_data": {"path": "echo"}}
    from executions.services.idempotency import _fingerprint

    cache.set(f"toolhub:idempotency:{user.pk}:{digest}", {"fingerprint": _fingerprint(body)})
    response = world["client"].post(
        "/api/v1/executions", body, format="json", HTTP_IDEMPOTENCY_KEY="busy-key"
    )
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "idempotency_key_in_progress"
