"""The published OpenAPI document against what the API really answers.

Each call below is made for real, then its status must be documented for the
operation and its body must match the documented schema: list pages with
their envelope, revocations with their body, errors with the one error body.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
import yaml
from django.test import Client
from django.utils import timezone
from drf_spectacular.validation import validate_schema
from jsonschema import Draft202012Validator
from rest_framework.test import APIClient

from executions.models import Approval, Execution
from registry.models import ApiToken, AuditEvent
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import limits as limit_services
from registry.services import mcp as mcp_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.factories import make_token
from tests.registry.test_authorization_matrix import GOVERNANCE_MATRIX, MATRIX, parse_matrix

pytestmark = pytest.mark.django_db

API = "/api/v1"
ERROR_REF = "#/components/schemas/Error"
NO_SUCH_ID = "00000000-0000-4000-8000-000000000000"


@pytest.fixture(scope="module")
def schema(django_db_setup, django_db_blocker) -> dict:
    with django_db_blocker.unblock():
        response = Client().get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    return response.json()


def json_schema(node):
    """An OpenAPI 3.0 schema as JSON Schema: ``nullable`` becomes ``anyOf [..., null]``.

    ``oneOf`` is read as ``anyOf``: formats are not checked here, so ``""`` would
    match both branches of a blank URL field (``format: uri`` or ``maxLength: 0``).
    """
    if isinstance(node, list):
        return [json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {
        "anyOf" if key == "oneOf" else key: json_schema(value)
        for key, value in node.items()
        if key != "nullable"
    }
    if node.get("nullable"):
        return {"anyOf": [converted, {"type": "null"}]}
    return converted


def resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def operation(schema: dict, method: str, url: str) -> dict:
    """The documented operation that serves ``url`` (literal path segments win over variables)."""
    path = url.split("?", 1)[0]
    matches = []
    for template, item in schema["paths"].items():
        pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$"
        if re.match(pattern, path) and method.lower() in item:
            matches.append((template.count("{"), template))
    assert matches, f"{method} {path} is not documented"
    return schema["paths"][min(matches)[1]][method.lower()]


def assert_documented(schema: dict, method: str, url: str, response) -> dict:
    """The response's status is documented for the operation, and its body matches."""
    op = operation(schema, method, url)
    status = str(response.status_code)
    assert status in op["responses"], (
        f"{method} {url} answered {status}; documented: {sorted(op['responses'])}"
    )
    documented = op["responses"][status]
    if not response.content:
        assert "content" not in documented, f"{method} {url} {status}: a body is documented"
        return documented
    media_type = response["Content-Type"].split(";")[0]
    assert media_type in documented.get("content", {}), (
        f"{method} {url} {status}: {media_type} not documented"
    )
    body_schema = documented["content"][media_type]["schema"]
    validator = Draft202012Validator(
        {**json_schema(body_schema), "components": json_schema(schema["components"])}
    )
    problems = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(response.json())
    ]
    assert not problems, f"{method} {url} {status}: {problems[:5]}"
    return documented


@pytest.fixture
def world(staff_user, owner):
    role = role_services.role_create(actor=staff_user, name="readers")
    tool = tool_services.tool_create(
        actor=staff_user,
        name="documented_tool",
        type="http",
        requires_approval=True,
        parameters=[{"name": "q", "type": "string", "required": True}],
        configs=[{"config_key": "base_url", "config_value": "http://127.0.0.1:9"}],
    )
    tool_services.tool_create(actor=staff_user, name="other_tool", type="http")
    grant_services.grant_create(actor=staff_user, role=role, action="read", tool=tool)
    agent = agent_services.agent_create(
        actor=staff_user, name="agent-doc", owner=owner, role_ids=[role.pk]
    )
    make_token(agent.user, name="first")
    make_token(agent.user, name="second")
    mcp_services.mcp_server_create(
        actor=staff_user, name="documented_mcp", transport="streamable_http", url="http://x/mcp"
    )
    limit_services.rate_limit_create(
        actor=staff_user, tool=tool, scope="global", max_requests=1, time_window_seconds=3600
    )
    pending = Execution.objects.create(
        tool=tool,
        tool_name=tool.name,
        agent=agent,
        principal=agent.user,
        principal_name=agent.user.username,
        status="pending_approval",
        input_data={"q": "x"},
        input_hash="h" * 64,
    )
    Approval.objects.create(
        execution=pending, input_hash="h" * 64, expires_at=timezone.now() + timedelta(hours=1)
    )
    Execution.objects.create(
        tool=tool,
        tool_name=tool.name,
        agent=agent,
        principal=agent.user,
        principal_name=agent.user.username,
        status="succeeded",
        input_data={"q": "y"},
        output_data={"ok": True},
    )
    assert AuditEvent.objects.count() > 1
    return {"role": role, "tool": tool, "agent": agent}


LISTS = [
    "/tools",
    "/roles",
    "/agents",
    "/agents/{A}/tokens",
    "/permissions",
    "/permissions/tool/{T}",
    "/permissions/role/{R}",
    "/registry/by-role/{R}",
    "/registry/by-role-name/readers",
    "/mcp-servers",
    "/rate-limits",
    "/approvals",
    "/executions",
    "/executions/tool/{T}",
    "/audit",
]


def fill(path: str, world) -> str:
    return (
        path.replace("{A}", str(world["agent"].pk))
        .replace("{T}", str(world["tool"].pk))
        .replace("{R}", str(world["role"].pk))
    )


@pytest.mark.parametrize("path", LISTS)
def test_lists_answer_the_documented_page(schema, world, staff_client, path):
    url = API + fill(path, world)
    response = staff_client.get(url, {"page_size": 1})
    assert response.status_code == 200, response.content
    documented = assert_documented(schema, "GET", url, response)
    page = resolve(schema, documented["content"]["application/json"]["schema"])
    assert page["type"] == "object"
    assert set(page["properties"]) == set(response.json())
    assert set(page["required"]) == set(response.json())
    assert resolve(schema, page["properties"]["results"])["type"] == "array"
    # The paginator's query parameters are documented, and a second page is linked.
    op = operation(schema, "GET", url)
    query = {p["name"] for p in op.get("parameters", []) if p["in"] == "query"}
    assert "page_size" in query and query & {"page", "cursor"}
    if len(response.json()["results"]) == 1 and response.json()["next"]:
        assert_documented(schema, "GET", url, staff_client.get(response.json()["next"]))


def test_token_revocation_documents_what_it_answers(schema, world, staff_client):
    token = ApiToken.objects.filter(user=world["agent"].user).first()
    url = f"{API}/agents/{world['agent'].pk}/tokens/{token.pk}"
    response = staff_client.delete(url)
    assert response.status_code == 200
    assert response.json()["revoked_at"]
    assert_documented(schema, "DELETE", url, response)
    assert "204" not in operation(schema, "DELETE", url)["responses"]


def test_creating_an_existing_grant_documents_its_200(schema, world, staff_client):
    url = f"{API}/permissions"
    body = {"tool_id": str(world["tool"].pk), "role_id": world["role"].pk, "action": "execute"}
    first = staff_client.post(url, body, format="json")
    again = staff_client.post(url, body, format="json")
    assert (first.status_code, again.status_code) == (201, 200)
    assert_documented(schema, "POST", url, first)
    assert_documented(schema, "POST", url, again)


def test_errors_answered_are_documented_with_the_error_body(
    schema, world, staff_client, plain_client
):
    tool, role = world["tool"], world["role"]
    calls = [
        (APIClient(), "GET", f"{API}/tools", None, 401),
        (staff_client, "GET", f"{API}/tools?page=0", None, 400),
        (staff_client, "GET", f"{API}/executions?cursor=%25%25", None, 400),
        (staff_client, "POST", f"{API}/roles", {"name": ""}, 400),
        (staff_client, "POST", f"{API}/roles", {"name": "readers"}, 409),
        (plain_client, "POST", f"{API}/roles", {"name": "new-role"}, 403),
        (plain_client, "GET", f"{API}/audit", None, 403),
        (plain_client, "GET", f"{API}/mcp-servers", None, 403),
        (staff_client, "GET", f"{API}/tools/{NO_SUCH_ID}", None, 404),
        (staff_client, "DELETE", f"{API}/roles/999999", None, 404),
        (staff_client, "POST", f"{API}/executions", {"tool": "no_such_tool"}, 404),
        (
            staff_client,
            "POST",
            f"{API}/rate-limits",
            {"tool_id": NO_SUCH_ID, "max_requests": 1, "time_window_seconds": 60},
            404,
        ),
        (staff_client, "POST", f"{API}/executions", {"tool": tool.name, "input_data": {}}, 422),
        (
            staff_client,
            "POST",
            f"{API}/executions",
            {"tool": tool.name, "input_data": {"q": "a"}},
            202,
        ),
        (
            staff_client,
            "POST",
            f"{API}/executions",
            {"tool": tool.name, "input_data": {"q": "b"}},
            429,
        ),
        (staff_client, "POST", f"{API}/tools/import", {"content": "{}"}, 400),
        (staff_client, "GET", f"{API}/registry/by-role/{role.pk}?page_size=0", None, 400),
        (staff_client, "GET", f"{API}/agents?page=999999", None, 404),
        (staff_client, "GET", f"{API}/registry/me?owner=x", None, 400),
        (staff_client, "GET", f"{API}/audit/head?x=1", None, 400),
    ]
    for client, method, url, body, status in calls:
        response = client.generic(
            method, url, json.dumps(body) if body is not None else "", "application/json"
        )
        assert response.status_code == status, (method, url, response.content)
        documented = assert_documented(schema, method, url, response)
        if status >= 400:
            assert documented["content"]["application/json"]["schema"] == {"$ref": ERROR_REF}
            assert set(response.json()["error"]) >= {"code", "message", "details"}
        if status == 429:
            assert "Retry-After" in documented["headers"] and response["Retry-After"]
        if status == 401:
            assert "WWW-Authenticate" in documented["headers"] and response["WWW-Authenticate"]


@pytest.mark.parametrize(
    ("method", "path", "expected"), parse_matrix(MATRIX) + parse_matrix(GOVERNANCE_MATRIX)
)
def test_every_status_of_the_authorization_matrix_is_documented(schema, method, path, expected):
    # tests/registry/test_authorization_matrix.py checks that these are the real answers.
    op = operation(schema, method, API + path)
    missing = sorted({str(s) for s in expected.values()} - set(op["responses"]))
    assert not missing, f"{method} {path}: {missing} not documented ({sorted(op['responses'])})"


def test_every_error_answer_is_the_error_component(schema):
    error = schema["components"]["schemas"]["Error"]
    assert error["required"] == ["error"]
    assert set(error["properties"]["error"]["required"]) == {"code", "message", "details"}
    for path, item in schema["paths"].items():
        for method, op in item.items():
            codes = op["responses"]
            # Every API operation needs credentials.
            assert "401" in codes, f"{method.upper()} {path}: no 401"
            for code, response in codes.items():
                if code >= "400":  # a 414 may also be gunicorn's HTML (documented beside it)
                    media = response["content"]["application/json"]
                    assert media["schema"] == {"$ref": ERROR_REF}, (method, path, code)


def test_schema_answers_json_when_asked_and_is_valid_openapi():
    as_json = Client().get("/api/schema/?format=json")
    assert as_json.status_code == 200
    assert "json" in as_json["Content-Type"]
    document = json.loads(as_json.content)
    validate_schema(document)  # the OpenAPI 3.0 JSON Schema drf-spectacular ships
    # The query parameter wins over an Accept header asking for something else.
    insisted = Client().get("/api/schema/?format=json", HTTP_ACCEPT="application/yaml")
    assert insisted.status_code == 200 and json.loads(insisted.content) == document
    accepted = Client().get("/api/schema/", HTTP_ACCEPT="application/json")
    assert accepted["Content-Type"].startswith("application/json")
    assert json.loads(accepted.content) == document
    as_yaml = Client().get("/api/schema/?format=yaml")
    assert as_yaml["Content-Type"].startswith("application/vnd.oai.openapi;")
    assert not as_yaml.content.startswith(b"{")
    assert yaml.safe_load(as_yaml.content) == document
    default = Client().get("/api/schema/")
    assert default["Content-Type"] == as_yaml["Content-Type"]
    assert yaml.safe_load(default.content) == document


def test_an_agent_without_a_webhook_matches_its_documented_shape(schema):
    agent = schema["components"]["schemas"]["AgentOutput"]["properties"]["webhook_url"]
    assert agent.get("type") == "string" and "oneOf" not in agent


def test_a_guard_name_in_use_is_a_documented_409(schema, staff_client):
    body = {"name": "no-pii", "kind": "pii", "action": "redact"}
    first = staff_client.post(f"{API}/guards", body, format="json")
    assert first.status_code == 201, first.content
    other = staff_client.post(f"{API}/guards", {**body, "name": "other"}, format="json")
    calls = [
        ("POST", f"{API}/guards", body),
        ("PUT", f"{API}/guards/{other.json()['id']}", body),
        ("PATCH", f"{API}/guards/{other.json()['id']}", {"name": "no-pii"}),
    ]
    for method, url, sent in calls:
        response = staff_client.generic(method, url, json.dumps(sent), "application/json")
        assert response.status_code == 409, (method, response.content)
        assert response.json()["error"]["code"] == "guard_name_taken"
        assert_documented(schema, method, url, response)


@pytest.mark.parametrize(
    "method, path",
    [("PATCH", "/agents/{agent_id}"), ("DELETE", "/agents/{agent_id}/tokens/{token_id}")],
)
def test_changes_that_could_leave_no_platform_admin_document_their_409(schema, method, path):
    # registry/services/platform_admins.py refuses them with 409 last_platform_admin.
    assert "409" in schema["paths"][API + path][method.lower()]["responses"]
