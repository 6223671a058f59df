"""The original Tools Module's clients spell things its way; ToolHub answers them too.

Seed 004 (Tools Module): ``check-permission`` defaults ``required_action`` to
``execute`` and answers ``has_permission``; a tool's ``type`` may come in
upper case; a parameter's default is ``default_value``, a string.
"""

from __future__ import annotations

import pytest

from registry.services import grants as grant_services
from registry.services import roles as role_services
from tests.factories import ToolFactory

pytestmark = pytest.mark.django_db

TOOLS = "/api/v1/tools"


@pytest.mark.parametrize(
    ("granted", "query", "allowed"),
    [
        ("read", "", False),  # the default asks for execute, which read is not
        ("execute", "", True),
        ("manage", "", True),
        ("read", "?required_action=read", True),
    ],
)
def test_check_permission_asks_for_execute_by_default_and_answers_has_permission(
    staff_client, granted, query, allowed
):
    tool = ToolFactory(name="ledger")
    role = role_services.role_create(actor=None, name="clerks")
    grant_services.grant_create(actor=None, role=role, action=granted, tool=tool)

    response = staff_client.get(f"/api/v1/registry/check-permission/{tool.pk}/{role.pk}{query}")

    assert response.status_code == 200
    body = response.json()
    assert body["required_action"] == ("read" if query else "execute")
    assert body["allowed"] is allowed and body["has_permission"] is allowed
    assert body["granted_action"] == granted


def create(client, **fields):
    return client.post(
        TOOLS, {"name": "lookup", "description": "Looks up", **fields}, format="json"
    )


@pytest.mark.parametrize("spelling", ["HTTP", "Http", "http"])
def test_a_tool_type_is_read_in_any_letter_case(staff_client, spelling):
    created = create(staff_client, type=spelling)
    assert created.status_code == 201, created.content
    assert created.json()["type"] == "http"
    tool_id = created.json()["id"]
    updated = staff_client.patch(f"{TOOLS}/{tool_id}", {"type": "PYTHON"}, format="json")
    assert updated.status_code == 200, updated.content
    assert updated.json()["type"] == "python"
    listed = staff_client.get(f"{TOOLS}?tool_type=PYTHON").json()
    assert [t["id"] for t in listed["results"]] == [tool_id]


def test_an_unknown_tool_type_is_still_refused_naming_the_field(staff_client):
    refused = create(staff_client, type="SOAP")
    assert refused.status_code == 400
    assert [d["field"] for d in refused.json()["error"]["details"]] == ["type"]


@pytest.mark.parametrize(
    ("kind", "text", "default"),
    [
        ("string", " spaced ", " spaced "),
        ("integer", "5", 5),
        ("integer", "-12", -12),
        ("number", "2.5", 2.5),
        ("number", "10", 10),
        ("boolean", "true", True),
        ("boolean", "False", False),
        ("array", '["a", 1]', ["a", 1]),
        ("object", '{"k": [1]}', {"k": [1]}),
    ],
)
def test_a_parameters_default_value_text_is_read_per_its_type(staff_client, kind, text, default):
    created = create(
        staff_client,
        type="http",
        parameters=[{"name": "p", "type": kind, "default_value": text}],
    )
    assert created.status_code == 201, created.content
    param = created.json()["parameters"][0]
    assert param["default"] == default and param["has_default"] is True
    assert isinstance(param["default_value"], str)
    # What it answers reads back as the same default, under either name.
    again = staff_client.post(
        f"{TOOLS}/{created.json()['id']}/parameters",
        {"name": "q", "type": kind.upper(), "default_value": param["default_value"]},
        format="json",
    )
    assert again.status_code == 201, again.content
    assert again.json()["default"] == default
    assert created.json()["input_schema"]["properties"]["p"]["default"] == default


@pytest.mark.parametrize(
    ("kind", "text", "said"),
    [
        ("integer", "five", "integer"),
        ("integer", "5.5", "integer"),
        ("number", "NaN", "number"),
        ("boolean", "yes", "true"),
        ("array", "{}", "array"),
        ("object", "{oops", "object"),
    ],
)
def test_a_default_value_that_does_not_read_as_its_type_is_a_400_naming_it(
    staff_client, kind, text, said
):
    refused = create(
        staff_client, type="http", parameters=[{"name": "p", "type": kind, "default_value": text}]
    )
    assert refused.status_code == 400, refused.content
    details = refused.json()["error"]["details"]
    assert [d["field"] for d in details] == ["parameters[0].default_value"]
    assert said in details[0]["message"]


def test_a_default_value_is_checked_against_the_parameters_schema(staff_client):
    refused = create(
        staff_client,
        type="http",
        parameters=[
            {"name": "p", "type": "string", "json_schema": {"enum": ["a"]}, "default_value": "b"}
        ],
    )
    assert refused.status_code == 400
    assert refused.json()["error"]["details"][0]["field"] == "parameters[0].default_value"


def test_default_and_default_value_may_come_together_only_when_they_agree(staff_client):
    tool = create(staff_client, type="http").json()
    url = f"{TOOLS}/{tool['id']}/parameters"
    agree = {"name": "n", "type": "integer", "default": 3, "default_value": "3"}
    assert staff_client.post(url, agree, format="json").status_code == 201
    differ = {"name": "m", "type": "integer", "default": 3, "default_value": "4"}
    refused = staff_client.post(url, differ, format="json")
    assert refused.status_code == 400
    assert refused.json()["error"]["details"][0]["field"] == "default_value"


def test_updating_a_parameter_reads_default_value_per_its_stored_type(staff_client):
    tool = create(
        staff_client, type="http", parameters=[{"name": "n", "type": "integer", "default": 1}]
    ).json()
    param = tool["parameters"][0]
    url = f"{TOOLS}/parameters/{param['id']}"
    patched = staff_client.patch(url, {"default_value": "7"}, format="json")
    assert patched.status_code == 200, patched.content
    assert patched.json()["default"] == 7 and patched.json()["default_value"] == "7"
    cleared = staff_client.patch(url, {"default_value": None}, format="json")
    assert cleared.status_code == 200
    assert cleared.json()["has_default"] is False and cleared.json()["default_value"] is None
    # A GET's body put back as it is (both spellings) is accepted.
    staff_client.patch(url, {"default_value": "9"}, format="json")
    body = {k: v for k, v in staff_client.get(url).json().items() if k in PARAMETER_INPUT}
    put = staff_client.put(url, body, format="json")
    assert put.status_code == 200, put.content
    assert put.json()["default"] == 9


PARAMETER_INPUT = {
    "name",
    "parameter_type",
    "type",
    "required",
    "description",
    "default",
    "default_value",
    "json_schema",
    "position",
}


def test_the_openapi_schema_describes_both_spellings(staff_client):
    schema = staff_client.get("/api/schema/?format=json").json()
    components = schema["components"]["schemas"]
    request = components["ParameterInputRequest"]["properties"]
    assert {"default", "default_value"} <= set(request)
    assert request["default_value"]["type"] == "string"
    answer = components["ToolParameterOutput"]["properties"]
    assert {"default", "default_value"} <= set(answer)
    tool_type = components["ToolInputRequest"]["properties"]["type"]
    assert {
        "type": "string",
        "enum": ["http", "database", "mcp", "python", "command"],
    } in tool_type["anyOf"]
    pattern = next(s["pattern"] for s in tool_type["anyOf"] if "pattern" in s)
    import re

    assert re.fullmatch(pattern, "HTTP") and not re.fullmatch(pattern, "SOAP")


@pytest.mark.parametrize(
    "text",
    [
        "tools:\n  - name: web_search\n    type: HTTP\n    configs: {base_url: https://s.example}\n",
        "type: tool\nname: web_search\ntool_type: Http\nconfigs: {base_url: https://s.example}\n",
    ],
)
def test_a_catalog_file_names_the_tool_type_in_any_letter_case(text):
    from registry.importers.run import import_content
    from registry.models import Tool

    report = import_content(text, actor=None)

    assert report.ok, report.text()
    assert Tool.objects.get(name="web_search").type == "http"
