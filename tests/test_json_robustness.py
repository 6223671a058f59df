"""JSON that Python reads but no record can hold: NaN and Infinity, deep nesting,
unpaired surrogates in names. Each gets a clear 4xx (recorded where the pipeline
records refusals) or is handled; none is a 500."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from executions import egress
from executions.jsonsafe import CIRCULAR, MAX_DEPTH, TOO_DEEP, json_safe
from executions.models import Execution
from executions.python_sync import python_tools_sync
from executions.redaction import REDACTED, redact
from executions.services.pipeline import InvalidArguments, execution_request
from executions.validation import validate_arguments
from registry.models import Tool
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.conftest import token_client
from tests.factories import make_user
from tests.servers.http_upstream import UpstreamServer
from toolhub.api.parsers import MAX_DEPTH as BODY_MAX_DEPTH
from toolhub.celery import app as celery_app

SECRET = "deep-secret-4c1d9e"
URL = "/api/v1/executions"
DEPTH_MESSAGE = f"Arguments may be nested at most {MAX_DEPTH} levels deep."


def nested_list(levels: int, leaf=None) -> list:
    """A list nested ``levels`` levels deep (``[]`` is one level)."""
    value = [] if leaf is None else [leaf]
    for _ in range(levels - 1):
        value = [value]
    return value


def nested_dict(levels: int, leaf=None) -> dict:
    value = {} if leaf is None else {"leaf": leaf}
    for _ in range(levels - 1):
        value = {"k": value}
    return value


def convert_text(number: str) -> str:
    """unit_convert's arguments as JSON text, ``number`` written as the value."""
    return '{"value": ' + number + ', "from_unit": "m", "to_unit": "km"}'


def stats_body(extra: str) -> str:
    """A request body calling text_stats with an unknown argument ``extra`` (JSON text)."""
    return '{"tool": "text_stats", "input_data": {"text": "x", "extra": ' + extra + "}}"


def depth_of(value) -> int:
    depth, level = 0, [value]
    while level:
        containers = [v for v in level if isinstance(v, dict | list)]
        if not containers:
            break
        depth += 1
        level = [c for v in containers for c in (v.values() if isinstance(v, dict) else v)]
    return depth


# --------------------------------------------------------------------------- API fixtures


@pytest.fixture(scope="module")
def upstream_server():
    with UpstreamServer() as server:
        yield server


@pytest.fixture
def upstream(upstream_server, settings):
    """The recording server, reachable through the egress guard (127.0.0.1 only)."""
    upstream_server.reset()
    settings.TOOLHUB_EGRESS_ALLOW = ["127.0.0.1/32"]
    egress.clear_dns_cache()
    yield upstream_server
    egress.clear_dns_cache()


@pytest.fixture
def eager_tasks():
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = previous


@pytest.fixture
def world(upstream, eager_tasks):
    python_tools_sync(actor=None)
    owner = make_user("owner-json")
    role = role_services.role_create(actor=None, name="json-callers")
    agent = agent_services.agent_create(
        actor=None, name="agent-json", owner=owner, role_ids=[role.pk]
    )
    http_tool = tool_services.tool_create(
        actor=None,
        name="deep_echo",
        type="http",
        timeout_seconds=5,
        parameters=[
            {"name": "path", "type": "string", "required": True},
            {"name": "depth", "type": "integer"},
        ],
        configs=[
            {"config_key": "base_url", "config_value": upstream.url},
            {"config_key": "endpoint", "config_value": "/{path}"},
            {"config_key": "auth_type", "config_value": "bearer_token"},
            {"config_key": "bearer_token", "config_value": SECRET, "is_secret": True},
        ],
    )
    tools = [http_tool, *Tool.objects.filter(name__in=["unit_convert", "text_stats"])]
    assert len(tools) == 3
    for tool in tools:
        grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    return {"client": token_client(agent.user), "agent": agent, "owner": owner}


def post_raw(client, text: str):
    return client.post(URL, data=text, content_type="application/json")


def refusal(response) -> Execution:
    """The refusal the 422 names, checked to be recorded as ``invalid``."""
    execution = Execution.objects.get(pk=response.json()["error"]["execution_id"])
    assert execution.status == "invalid" and execution.reason_code == "invalid_arguments"
    return execution


# --------------------------------------------------------------------------- NaN / Infinity


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999", "-1E400"])
def test_non_finite_numbers_in_the_body_are_a_400(world, token):
    body = '{"tool": "unit_convert", "input_data": ' + convert_text(token) + ', "wait": true}'
    response = post_raw(world["client"], body)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "parse_error"
    assert token.lstrip("-") in error["message"] and "finite" in error["message"]
    assert not Execution.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_numbers_in_json_text_arguments_are_a_recorded_422(world, token):
    text = convert_text(token)
    response = world["client"].post(
        URL, {"tool": "unit_convert", "input_data": text, "wait": True}, format="json"
    )
    assert response.status_code == 422, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid_arguments"
    [problem] = error["details"]
    assert problem["path"] == "$" and problem["expected"] == "a JSON object"
    assert problem["message"].startswith("Arguments are not valid JSON: ")
    assert token.lstrip("-") in problem["message"] and "finite" in problem["message"]
    assert refusal(response).raw_input == text


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("body", "named"),
    [
        ('{"tool": "unit_convert", "tool": "text_stats", "input_data": {}}', '"tool"'),
        ('{"tool": "text_stats", "input_data": {"text": "a", "text": "b"}}', '"text"'),
    ],
)
def test_a_key_given_twice_is_a_400_naming_it(world, body, named):
    """Parsers disagree on which value wins: a proxy in front could read another call."""
    response = post_raw(world["client"], body)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "parse_error"
    assert named in error["message"] and "twice" in error["message"]
    assert not Execution.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_key_given_twice_in_json_text_arguments_is_a_recorded_422(world):
    text = '{"text": "a", "text": "b"}'
    response = world["client"].post(
        URL, {"tool": "text_stats", "input_data": text, "wait": True}, format="json"
    )
    assert response.status_code == 422, response.content
    [problem] = response.json()["error"]["details"]
    assert "twice" in problem["message"]
    assert refusal(response).raw_input == text


@pytest.mark.django_db(transaction=True)
def test_an_integer_too_long_to_read_is_a_400_in_plain_words(world):
    body = '{"tool": "unit_convert", "input_data": {"value": ' + "9" * 5000 + "}}"
    response = post_raw(world["client"], body)
    assert response.status_code == 400, response.content
    message = response.json()["error"]["message"]
    assert "5000 digits" in message and "sys." not in message


@pytest.mark.django_db(transaction=True)
def test_a_number_string_beyond_float_range_is_not_coerced_to_infinity(world):
    response = world["client"].post(
        URL,
        {
            "tool": "unit_convert",
            "input_data": {"value": "1e999", "from_unit": "m", "to_unit": "km"},
            "wait": True,
        },
        format="json",
    )
    assert response.status_code == 422, response.content
    [problem] = response.json()["error"]["details"]
    assert problem["path"] == "value" and problem["expected"] == "number"
    assert refusal(response).input_data["value"] == "1e999"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("number", "name"), [(float("nan"), "NaN"), (float("inf"), "Infinity"), (-float("inf"), "-")]
)
def test_a_non_finite_float_from_a_python_caller_is_refused_and_recorded(world, number, name):
    with pytest.raises(InvalidArguments) as caught:
        execution_request(
            user=world["agent"].user,
            tool_ref="unit_convert",
            arguments={"value": number, "from_unit": "m", "to_unit": "km"},
            wait=True,
        )
    [problem] = caught.value.details
    assert problem["path"] == "value" and problem["expected"] == "a finite number"
    assert problem["message"].startswith(name) and "finite" in problem["message"]
    execution = Execution.objects.get(pk=caught.value.extra["execution_id"])
    assert execution.status == "invalid"
    assert not Execution.objects.exclude(status="invalid").exists()


@pytest.mark.django_db(transaction=True)
def test_nan_in_the_admin_test_run_is_an_invalid_arguments_answer(world, staff_user):
    client = Client()
    client.force_login(staff_user)
    tool = Tool.objects.get(name="unit_convert")
    response = client.post(
        reverse("admin:registry_tool_test_run", args=[tool.pk]),
        {"arguments": '{"value": NaN, "from_unit": "m", "to_unit": "km"}', "wait_seconds": 5},
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "invalid_arguments" in page and "NaN is not a JSON value" in page
    assert list(Execution.objects.values_list("status", flat=True)) == ["invalid"]


# --------------------------------------------------------------------------- deep nesting


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "body",
    [
        "[" * 2000 + "]" * 2000,
        stats_body("[" * 2000 + "]" * 2000),
        # Parsed without trouble, but deeper than any body may be.
        stats_body(json.dumps(nested_list(400))),
    ],
    ids=["bare", "in-arguments", "parseable"],
)
def test_a_body_nested_too_deeply_is_a_400(world, body):
    response = post_raw(world["client"], body)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "parse_error"
    assert f"nested more than {BODY_MAX_DEPTH} levels deep" in error["message"]
    assert not Execution.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_arguments_nested_too_deeply_are_a_recorded_422(world):
    extra = nested_list(110, leaf="x")
    response = world["client"].post(
        URL, {"tool": "text_stats", "input_data": {"text": "x", "extra": extra}}, format="json"
    )
    assert response.status_code == 422, response.content
    [problem] = response.json()["error"]["details"]
    assert problem == {
        "path": "extra",
        "message": DEPTH_MESSAGE,
        "expected": f"at most {MAX_DEPTH} levels of nesting",
    }
    stored = refusal(response).input_data
    assert stored["text"] == "x" and depth_of(stored) == MAX_DEPTH
    assert TOO_DEEP in json.dumps(stored)
    # The deepest arguments allowed (the object is level 1) are checked as usual.
    allowed = {"text": "x", "extra": nested_list(MAX_DEPTH - 1)}
    response = world["client"].post(
        URL, {"tool": "text_stats", "input_data": allowed}, format="json"
    )
    assert [p["message"] for p in response.json()["error"]["details"]] == [
        "Unknown argument 'extra'."
    ]
    assert depth_of(refusal(response).input_data) == MAX_DEPTH


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("shape", [nested_list, nested_dict])
def test_deep_arguments_from_a_python_caller_are_refused_and_recorded(world, shape):
    # Not through the request parser: the pipeline's own rule must hold (admin, MCP).
    with pytest.raises(InvalidArguments) as caught:
        execution_request(
            user=world["agent"].user,
            tool_ref="text_stats",
            arguments={"text": "x", "extra": shape(400)},
        )
    assert [p["path"] for p in caught.value.details] == ["extra"]
    assert caught.value.details[0]["message"] == DEPTH_MESSAGE
    execution = Execution.objects.get(pk=caught.value.extra["execution_id"])
    assert execution.status == "invalid" and depth_of(execution.input_data) == MAX_DEPTH


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("levels", [300, 5000])
def test_json_text_arguments_nested_too_deeply_are_a_recorded_422(world, levels):
    text = '{"text": "x", "extra": ' + "[" * levels + "]" * levels + "}"
    response = world["client"].post(URL, {"tool": "text_stats", "input_data": text}, format="json")
    assert response.status_code == 422, response.content
    [problem] = response.json()["error"]["details"]
    assert problem["message"] == DEPTH_MESSAGE
    # Parsed (300 levels): the argument is named; too deep to parse: the whole text.
    assert problem["path"] == ("extra" if levels == 300 else "$")
    execution = refusal(response)
    if levels == 300:
        assert depth_of(execution.input_data) == MAX_DEPTH
    else:
        assert execution.raw_input == text and execution.input_data is None


def test_an_argument_holding_json_text_is_parsed_within_the_same_rules():
    # A string argument is parsed as JSON when the schema wants an array or object.
    schema = {"type": "object", "properties": {"items": {"type": "array"}}}
    for text in ("[" * 5000 + "]" * 5000, "[NaN]", "[1e999]"):
        outcome = validate_arguments({"items": text}, schema)
        assert [(p["path"], p["expected"]) for p in outcome.errors] == [("items", "array")]
    outcome = validate_arguments({"items": json.dumps(nested_list(300))}, schema)
    assert [(p["path"], p["message"]) for p in outcome.errors] == [("items", DEPTH_MESSAGE)]
    assert depth_of(outcome.value) == MAX_DEPTH


@pytest.mark.django_db(transaction=True)
def test_an_upstream_reply_nested_500_levels_is_recorded(world, upstream):
    response = world["client"].post(
        URL,
        {"tool": "deep_echo", "input_data": {"path": "nested", "depth": 500}, "wait": True},
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "succeeded", (body["error_type"], body["error_message"])
    assert body["error_type"] == "" and upstream.last.headers["authorization"].endswith(SECRET)
    stored = Execution.objects.get(pk=body["id"]).output_data
    assert depth_of(stored) == MAX_DEPTH and TOO_DEEP in json.dumps(stored)
    assert stored["status_code"] == 200 and SECRET not in json.dumps(stored)


# --------------------------------------------------------------------------- surrogates


@pytest.mark.django_db(transaction=True)
def test_a_lone_surrogate_in_an_argument_name_is_a_400_naming_it(world):
    """Not text (UTF-8 cannot encode it): refused as the body is read, like a duplicate key."""
    body = '{"tool": "text_stats", "input_data": {"text": "x", "\\ud800": 1}}'
    before = Execution.objects.count()
    response = post_raw(world["client"], body)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert [d["field"] for d in error["details"]] == ["input_data.\ufffd"]
    assert "unpaired surrogates" in error["details"][0]["message"]
    assert Execution.objects.count() == before


@pytest.mark.django_db(transaction=True)
def test_a_lone_surrogate_in_an_unknown_request_field_is_a_400(world):
    response = post_raw(world["client"], '{"tool": "text_stats", "\\udfff": 1}')
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert [d["field"] for d in error["details"]] == ["\ufffd"]
    assert "unpaired surrogates" in error["details"][0]["message"]


# --------------------------------------------------------------------------- units


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 400, 5000])
@pytest.mark.parametrize("shape", [nested_list, nested_dict])
def test_json_safe_cuts_deep_nesting_and_never_crashes(levels, shape):
    value = json_safe(shape(levels, leaf=1))
    assert depth_of(value) == MAX_DEPTH
    innermost = value
    for _ in range(MAX_DEPTH - 1):
        innermost = innermost[0] if isinstance(innermost, list) else innermost["k"]
    assert innermost in ([TOO_DEEP], {"k": TOO_DEEP})
    json.dumps(value)  # any encoder takes it
    allowed = shape(MAX_DEPTH - 1, leaf=(1, 2))  # the tuple is level MAX_DEPTH: kept whole
    assert json_safe(allowed) == json.loads(json.dumps(allowed))
    loop: list = [1]
    loop.append(loop)
    assert json_safe(loop) == [1, CIRCULAR]


@pytest.mark.parametrize("levels", [1000, 5000])
def test_redact_handles_any_depth(levels):
    value = {"a": nested_list(levels, leaf=f"x {SECRET} y"), SECRET: (SECRET, 1)}
    redacted = redact(value, [SECRET])
    assert redacted[REDACTED] == [REDACTED, 1]
    inner = redacted["a"]
    for _ in range(levels - 1):
        assert isinstance(inner, list) and len(inner) == 1
        inner = inner[0]
    assert inner == [f"x {REDACTED} y"]
    assert value["a"] is not redacted["a"]  # a copy: the input is unchanged


def test_redact_cuts_cycles_instead_of_looping():
    loop: dict = {"s": SECRET}
    loop["self"] = loop
    shared = [SECRET]
    assert redact(loop, [SECRET]) == {"s": REDACTED, "self": CIRCULAR}
    assert redact([shared, shared], [SECRET]) == [[REDACTED], [REDACTED]]


def test_number_strings_python_cannot_convert_are_left_to_the_schema():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "x": {"type": "number"}}}
    outcome = validate_arguments({"n": "9" * 5000, "x": "-1e999"}, schema)
    assert {p["path"]: p["expected"] for p in outcome.errors} == {"n": "integer", "x": "number"}
    huge = validate_arguments('{"n": ' + "9" * 5000 + "}", schema)
    assert huge.errors[0]["path"] == "$" and "not valid JSON" in huge.errors[0]["message"]


def test_the_renderer_answers_text_utf8_cannot_encode_with_replacement_characters():
    from toolhub.api.renderers import EncodableJSONRenderer

    renderer = EncodableJSONRenderer()
    data = {"error": {"details": [{"field": "a\ud800", "deep": nested_list(300, leaf="\udfff")}]}}
    body = json.loads(renderer.render(data).decode("utf-8"))
    detail = body["error"]["details"][0]
    assert detail["field"] == "a\ufffd" and "\ufffd" in json.dumps(
        detail["deep"], ensure_ascii=False
    )
    assert renderer.render({"ok": "Zoë 😀"}) == '{"ok":"Zoë 😀"}'.encode()


def test_an_unencodable_unknown_field_is_a_400_on_every_endpoint(staff_client):
    """The tools endpoint's strict serializer quotes unknown field names back as they came."""
    body = '{"name": "surrogate_tool", "type": "http", "\\ud800x": 1}'
    response = staff_client.post("/api/v1/tools", body, content_type="application/json")
    assert response.status_code == 400, response.content
    text = response.content.decode("utf-8")
    assert "\ufffdx" in text and not Tool.objects.filter(name="surrogate_tool").exists()


def test_null_for_an_optional_argument_means_left_out():
    """LLMs send null for optional arguments they do not use: the default applies."""
    schema = {
        "type": "object",
        "properties": {
            "q": {"type": "string"},
            "limit": {"type": "integer", "default": 10},
            "note": {"type": ["string", "null"]},
            "either": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "required": ["q"],
        "additionalProperties": False,
    }
    outcome = validate_arguments({"q": "x", "limit": None, "note": None, "either": None}, schema)
    assert outcome.ok, outcome.errors
    assert outcome.value == {"q": "x", "limit": 10, "note": None, "either": None}
    # A required argument is not quietly dropped: null there is still an error.
    refused = validate_arguments({"q": None}, schema)
    assert not refused.ok and refused.errors[0]["path"] == "q"
