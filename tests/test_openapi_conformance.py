"""What the OpenAPI document promises, one promise at a time, against what the API does.

Each test here stands for a class of discrepancy the schemathesis run
(tests/test_schemathesis.py) reports: a value the document offers that the API
refuses, or one it forbids that the API takes.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from jsonschema import Draft4Validator

from tests.test_openapi_schema import json_schema

pytestmark = pytest.mark.django_db

API = "/api/v1"


@pytest.fixture(scope="module")
def document(django_db_setup, django_db_blocker) -> dict:
    with django_db_blocker.unblock():
        response = Client().get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    return response.json()


def component(document: dict, name: str) -> dict:
    """The component as JSON Schema (``nullable`` read as OpenAPI 3.0 means it)."""
    return json_schema(document["components"]["schemas"][name])


def parameters(document: dict, name: str):
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for parameter in operation.get("parameters", []):
                if parameter["name"] == name:
                    yield f"{method.upper()} {path}", parameter["schema"]


def test_page_size_and_page_are_documented_from_one_as_the_api_reads_them(document):
    sizes = dict(parameters(document, "page_size"))
    pages = dict(parameters(document, "page"))
    assert sizes and pages
    assert {(s.get("minimum"), s.get("maximum")) for s in sizes.values()} == {(1, 200)}
    assert {p.get("minimum") for p in pages.values()} == {1}


@pytest.mark.parametrize("name", ["page_size", "page"])
def test_a_page_or_page_size_of_zero_is_a_400_naming_it(staff_client, name):
    response = staff_client.get(f"{API}/tools", {name: 0})
    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["field"] == name


def test_integer_ids_are_documented_from_one(document, staff_client):
    ids = dict(parameters(document, "actor_id")) | dict(parameters(document, "role_id"))
    integers = {where: schema for where, schema in ids.items() if schema["type"] == "integer"}
    assert integers
    assert {s.get("minimum") for s in integers.values()} == {1}
    response = staff_client.get(f"{API}/audit", {"actor_id": 0})
    assert response.status_code == 400


def test_the_execution_request_is_documented_with_tool_or_tool_id_not_both(document, staff_client):
    validator = Draft4Validator(component(document, "ExecutionRequestRequest"))
    both = {"tool": "text_stats", "tool_id": "00000000-0000-4000-8000-000000000000"}
    assert not validator.is_valid(both)
    assert not validator.is_valid({"input_data": {}})
    assert not validator.is_valid({"tool": "text_stats", "input_data": {}, "arguments": {}})
    assert not validator.is_valid({"tool": "text_stats", "role": "a", "role_id": "1"})
    assert validator.is_valid({"tool": "text_stats", "role": "a", "role_id": None})
    assert validator.is_valid({"tool_id": "00000000-0000-4000-8000-000000000000", "wait": 2.5})
    response = staff_client.post(f"{API}/executions", both, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["field"] == "tool"


@pytest.mark.parametrize(
    "url, name",
    [
        (f"{API}/permissions?action=", "action"),
        (f"{API}/permissions?tool_id=", "tool_id"),
        (f"{API}/executions?tool_id=", "tool_id"),
        (f"{API}/executions/export?format=", "format"),
        (f"{API}/stats?group_by=", "group_by"),
        (f"{API}/stats?tool_id=", "tool_id"),
        (f"{API}/tools?is_active=", "is_active"),
        (f"{API}/audit?occurred_after=", "occurred_after"),
    ],
)
def test_an_empty_filter_value_is_refused_naming_the_parameter(staff_client, url, name):
    response = staff_client.get(url)
    assert response.status_code == 400, response.content
    assert [d["field"] for d in response.json()["error"]["details"]] == [name]


def test_an_undeclared_method_is_answered_405_whatever_the_query_string(staff_client):
    response = staff_client.generic("TRACE", f"{API}/tools?page=0&bogus=1")
    assert response.status_code == 405
    assert "GET" in response["Allow"]
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_every_operation_documents_the_414_for_a_long_request_line(document):
    operations = [op for item in document["paths"].values() for op in item.values()]
    assert operations
    for operation in operations:
        answer = operation["responses"]["414"]
        assert sorted(answer["content"]) == ["application/json", "text/html"]
        assert "4094 bytes" in answer["description"] and "gunicorn" in answer["description"]


def test_a_request_line_past_the_limit_is_refused_with_the_error_body(staff_client):
    response = staff_client.get(f"{API}/tools?search=" + "a" * 4100)
    assert response.status_code == 414
    assert response.json()["error"]["code"] == "request_line_too_long"
    # Just under the limit (the line is "GET <path> HTTP/1.1") is still answered.
    fits = 4094 - len(f"GET {API}/tools?search= HTTP/1.1")
    assert staff_client.get(f"{API}/tools?search=" + "a" * fits).status_code == 200


def test_request_bodies_are_documented_closed_to_unknown_fields(document, staff_client):
    for name in ("RoleInputRequest", "GrantInputRequest", "ExecutionRequestRequest"):
        assert component(document, name)["additionalProperties"] is False
    response = staff_client.post(f"{API}/roles", {"name": "r", "colour": "red"}, format="json")
    assert response.status_code == 400


def test_a_number_where_the_document_says_string_is_refused(staff_client):
    response = staff_client.post(f"{API}/roles", {"name": "r", "description": 0}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["field"] == "description"
    response = staff_client.post(
        f"{API}/permissions", {"role_id": 1, "action": "read", "tool_id": 7}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["field"] == "tool_id"


def test_json_fields_are_documented_with_the_values_the_api_takes(document):
    tool = component(document, "ToolInputRequest")["properties"]
    assert tool["tool_metadata"]["type"] == "object"
    condition = Draft4Validator(tool["approval_condition"])
    assert not condition.is_valid(None) and condition.is_valid({"type": "object"})
    grants = component(document, "BulkGrantInputRequest")["properties"]["role_ids"]
    assert grants["minItems"] == 1


def test_query_parameters_are_documented_as_the_api_reads_them(document):
    for where, schema in parameters(document, "tool_id"):
        if schema.get("type") == "string":
            assert schema.get("format") == "uuid", where
    for name in ("created_after", "occurred_after", "from"):
        assert all(("format" in s or "anyOf" in s) for _, s in parameters(document, name)), name
    for path, item in document["paths"].items():
        for operation in item.values():
            for parameter in operation.get("parameters", []):
                schema = parameter["schema"]
                if parameter["in"] == "query" and schema.get("type") == "string":
                    constrained = {"enum", "format", "pattern"} & set(schema)
                    assert constrained and schema.get("minLength", 1) >= 1, (path, parameter)
    (key,) = [s for _, s in parameters(document, "Idempotency-Key")]
    assert key["pattern"] == r"^[A-Za-z0-9._:+/=-]{1,200}$"


def test_a_control_character_in_an_imported_file_is_a_400_not_a_500(staff_client):
    response = staff_client.post(f"{API}/tools/import", {"content": "\x0e"}, format="json")
    assert response.status_code == 400
    assert "YAML" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "body, field",
    [
        ({"name": "t", "type": "http", "is_active": "yes"}, "is_active"),
        ({"name": "t", "type": "http", "timeout_seconds": "7"}, "timeout_seconds"),
    ],
)
def test_a_string_where_the_document_says_boolean_or_integer_is_refused(staff_client, body, field):
    response = staff_client.post(f"{API}/tools", body, format="json")
    assert response.status_code == 400
    assert [d["field"] for d in response.json()["error"]["details"]] == [field]


def test_a_status_list_with_an_empty_entry_is_refused_as_documented(document, staff_client):
    (pattern,) = {s["pattern"] for _, s in parameters(document, "status") if "pattern" in s}
    assert re.match(pattern, "queued, running") and not re.match(pattern, "queued,,running")
    assert staff_client.get(f"{API}/executions", {"status": "queued, running"}).status_code == 200
    response = staff_client.get(f"{API}/executions", {"status": "queued,,running"})
    assert response.status_code == 400


def request_body(document: dict, method: str, path: str) -> dict:
    return document["paths"][f"{API}{path}"][method]["requestBody"]


@pytest.mark.parametrize(
    "name, field",
    [
        ("ToolInputRequest", "name"),
        ("ParameterInputRequest", "name"),
        ("ConfigInputRequest", "config_key"),
        ("AgentInputRequest", "name"),
        ("MCPServerInputRequest", "name"),
    ],
)
def test_names_and_keys_are_documented_with_the_pattern_the_api_checks(document, name, field):
    schema = component(document, name)["properties"][field]
    assert schema["pattern"]
    assert not Draft4Validator(schema).is_valid("a b")
    assert Draft4Validator(schema).is_valid("a_b")


def test_a_parameter_name_the_document_refuses_is_refused_naming_it(document, staff_client):
    assert not Draft4Validator(component(document, "ParameterInputRequest")).is_valid({"name": "0"})
    body = {"name": "t", "type": "http", "parameters": [{"name": "0"}]}
    response = staff_client.post(f"{API}/tools", body, format="json")
    assert response.status_code == 400
    assert [d["field"] for d in response.json()["error"]["details"]] == ["parameters[0].name"]


def test_a_role_permission_is_documented_as_app_label_dot_codename(document, staff_client):
    item = component(document, "RoleInputRequest")["properties"]["permissions"]["items"]
    assert not Draft4Validator(item).is_valid("00")
    assert Draft4Validator(item).is_valid("registry.view_audit")
    response = staff_client.post(
        f"{API}/roles", {"name": "r", "permissions": ["00"]}, format="json"
    )
    assert response.status_code == 400


@pytest.mark.parametrize(
    "value", [True, False, [], "", 0], ids=["true", "false", "empty-list", "empty-text", "zero"]
)
def test_an_approval_condition_or_guard_config_that_is_not_an_object_is_refused_as_documented(
    document, staff_client, value
):
    condition = component(document, "ToolInputRequest")["properties"]["approval_condition"]
    config = component(document, "GuardInputRequest")["properties"]["config"]
    assert not Draft4Validator(condition).is_valid(value)
    assert not Draft4Validator(config).is_valid(value)
    body = {"name": "t", "type": "http", "approval_condition": value}
    response = staff_client.post(f"{API}/tools", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["field"] == "approval_condition"
    body = {"name": "g", "kind": "pii", "action": "redact", "config": value}
    response = staff_client.post(f"{API}/guards", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["field"] == "config"


def test_a_token_with_both_an_expiry_date_and_a_number_of_days_breaks_the_document(document):
    validator = Draft4Validator(component(document, "TokenInputRequest"))
    assert not validator.is_valid({"expires_at": "2999-01-01T00:00:00Z", "expires_in_days": 3})
    assert validator.is_valid({"expires_at": None, "expires_in_days": 3})
    assert validator.is_valid({"expires_in_days": 3})


def test_an_execution_request_without_a_body_breaks_the_document(document, staff_client):
    assert request_body(document, "post", "/executions")["required"] is True
    response = staff_client.post(f"{API}/executions")
    assert response.status_code == 400


def test_the_schemathesis_config_names_operations_the_document_has(document):
    config = tomllib.loads((Path(settings.BASE_DIR) / "schemathesis.toml").read_text())
    documented = {
        f"{method.upper()} {path}" for path, item in document["paths"].items() for method in item
    }
    named = [name for entry in config["operations"] for name in entry["include-name"]]
    assert named and set(named) <= documented
    assert all(
        "cursor" in (p["name"] for p in item["get"].get("parameters", []))
        for path, item in document["paths"].items()
        if path in ("/api/v1/executions", "/api/v1/audit")
    )


def test_counts_stored_in_an_integer_column_are_documented_up_to_its_largest_value(
    document, staff_client
):
    largest = 2**31 - 1
    limits = component(document, "RateLimitInputRequest")["properties"]
    tools = component(document, "ToolInputRequest")["properties"]
    servers = component(document, "MCPServerInputRequest")["properties"]
    for schema in (
        limits["max_requests"],
        tools["cache_ttl_seconds"],
        tools["max_response_bytes"],
        component(document, "ParameterInputRequest")["properties"]["position"],
    ):
        assert schema["maximum"] == largest
    assert Draft4Validator(tools["max_concurrency"]).is_valid(None)
    assert not Draft4Validator(servers["max_concurrency"]).is_valid(largest + 1)
    body = {"max_requests": largest + 1, "time_window_seconds": 60}
    response = staff_client.post(f"{API}/rate-limits", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["field"] == "max_requests"


def test_a_rejection_is_documented_with_the_reason_it_needs(document):
    body = request_body(document, "post", "/approvals/{approval_id}/reject")
    assert body["required"] is True
    validator = Draft4Validator(component(document, "RejectionRequest"))
    assert not validator.is_valid({}) and not validator.is_valid({"reason": "   "})
    assert validator.is_valid({"reason": "not today"})
    approve = request_body(document, "post", "/approvals/{approval_id}/approve")
    assert Draft4Validator(component(document, "DecisionRequest")).is_valid({})
    assert not approve.get("required")
