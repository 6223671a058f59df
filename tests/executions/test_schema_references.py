"""A tool's schemas never make ToolHub fetch a URL or read a file ($ref)."""

from __future__ import annotations

import pytest

from executions.services import governance
from registry.models import Tool, ToolParameter
from registry.services import tools as tool_services
from tests.conftest import token_client
from tests.executions.conftest import echo_caller
from toolhub.exceptions import ToolHubError

pytestmark = pytest.mark.django_db


@pytest.fixture
def caller(upstream, allow_loopback, eager_tasks):
    world = echo_caller(upstream, "refs", "ref_tool")
    world["client"] = token_client(world["agent"].user)
    world["parameter"] = world["tool"].parameters.get(name="path")
    return world


def targets(upstream) -> list[str]:
    return [
        f"{upstream.url}/echo/schema.json",
        "file:///etc/hostname",
        "#/nope",
        "#/properties/path",
    ]


def test_references_are_refused_when_a_schema_is_saved(caller, upstream):
    for ref in targets(upstream):
        with pytest.raises(ToolHubError) as raised:
            tool_services.parameter_update(
                actor=None, parameter=caller["parameter"], data={"json_schema": {"$ref": ref}}
            )
        assert "references are not supported (at /$ref)" in str(raised.value.details)
        with pytest.raises(ToolHubError) as raised:
            tool_services.tool_update(
                actor=None,
                tool=caller["tool"],
                data={
                    "requires_approval": True,
                    "approval_condition": {"properties": {"path": {"allOf": [{"$ref": ref}]}}},
                },
            )
        assert "references are not supported" in str(raised.value.details)
    assert upstream.requests == []


def test_api_names_the_reference(caller, staff_client):
    parameter = caller["parameter"]
    response = staff_client.patch(
        f"/api/v1/tools/parameters/{parameter.pk}",
        {"json_schema": {"items": {"$ref": "http://169.254.169.254/latest"}}},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert "references are not supported (at /items/$ref)" in response.content.decode()


def test_a_stored_reference_is_never_fetched_and_the_call_is_a_clear_422(caller, upstream):
    # Stored before references were refused (or written around the services).
    for ref in (f"{upstream.url}/echo/schema.json", "#/nope"):
        ToolParameter.objects.filter(pk=caller["parameter"].pk).update(json_schema={"$ref": ref})
        response = caller["client"].post(
            "/api/v1/executions",
            {"tool": "ref_tool", "input_data": {"path": "echo"}, "wait": True},
            format="json",
        )
        assert response.status_code == 422, response.content
        problem = response.json()["error"]["details"][0]
        assert "input schema cannot be used" in problem["message"]
        assert ref.rsplit("#", 1)[-1] in problem["message"]
    assert upstream.requests == []


def test_a_stored_condition_with_a_reference_fails_closed_without_fetching(caller, upstream):
    Tool.objects.filter(pk=caller["tool"].pk).update(
        requires_approval=True,
        approval_condition={"$ref": f"{upstream.url}/echo/condition.json"},
    )
    tool = Tool.objects.get(pk=caller["tool"].pk)
    assert governance.approval_reason(tool, {"path": "echo"}) == "approval_condition_unusable"
    assert upstream.requests == []
