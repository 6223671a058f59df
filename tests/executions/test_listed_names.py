"""A name a discovery format listed a tool under is a name POST /executions takes, for
that caller (among the tools it may read), and never one of two tools."""

from __future__ import annotations

import hashlib
import itertools

import pytest

from executions.models import Execution
from registry import formats
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.conftest import token_client
from tests.factories import make_user

pytestmark = [pytest.mark.django_db(transaction=True)]

LONG = "9" + "x" * 63  # 64 characters, a digit first: too long for Gemini with a mark


def _echo_tool(name: str, upstream):
    return tool_services.tool_create(
        actor=None,
        name=name,
        type="http",
        timeout_seconds=5,
        parameters=[{"name": "path", "type": "string", "required": True}],
        configs=[
            {"config_key": "base_url", "config_value": upstream.url},
            {"config_key": "endpoint", "config_value": "/{path}"},
        ],
    )


@pytest.fixture
def caller(upstream, allow_loopback, eager_tasks):
    owner = make_user("owner-names")
    role = role_services.role_create(actor=None, name="name-callers")
    agent = agent_services.agent_create(
        actor=None, name="agent-names", owner=owner, role_ids=[role.pk]
    )
    for name in ("2fa-crm-lookup", "-dash-first", LONG, "plain_tool"):
        tool = _echo_tool(name, upstream)
        grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    return {"client": token_client(agent.user), "role": role, "upstream": upstream}


def run(client, tool: str):
    body = {"tool": tool, "input_data": {"path": "echo"}, "wait": True}
    return client.post("/api/v1/executions", body, format="json")


@pytest.mark.parametrize("fmt", formats.FORMATS)
def test_every_name_a_format_lists_runs_the_tool_it_was_listed_for(caller, fmt):
    listed = caller["client"].get(f"/api/v1/registry/me?format={fmt}").json()["name_map"]
    assert len(listed) == 4
    for given, target in listed.items():
        response = run(caller["client"], given)
        assert response.status_code == 200, (given, response.json())
        assert response.json()["tool_name"] == target["tool_name"]
        assert response.json()["status"] == "succeeded"


def test_gemini_lists_a_name_starting_with_a_digit_under_a_marked_name(caller):
    listed = caller["client"].get("/api/v1/registry/me?format=gemini").json()["name_map"]
    names = {target["tool_name"]: given for given, target in listed.items()}
    assert names["2fa-crm-lookup"] == "_.2fa-crm-lookup"
    assert names["-dash-first"] == "_.-dash-first"
    assert names["plain_tool"] == "plain_tool"
    assert len(names[LONG]) == 64 and names[LONG].startswith("_." + LONG[:45] + ".")
    execution = Execution.objects.get(pk=run(caller["client"], "_.2fa-crm-lookup").json()["id"])
    assert execution.requested_tool == "_.2fa-crm-lookup"
    assert execution.tool_name == "2fa-crm-lookup"


def test_a_listed_name_of_a_tool_the_caller_may_not_read_is_not_found(caller):
    hidden = _echo_tool("7hidden", caller["upstream"])
    response = run(caller["client"], formats.provider_name(hidden.name, "gemini"))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "tool_not_found"
    made_up_names = ("_.nothing-here", "_." + LONG[:45] + ".0000000000000000", "_.", "_." * 300)
    for made_up in made_up_names:
        assert run(caller["client"], made_up).status_code == 404


def _colliding_names(digits: int) -> tuple[str, str]:
    """Two 64-character names whose first ``digits`` hex digits of SHA-256 agree."""
    stem, seen = "8" + "y" * 60, {}
    for a, b, c in itertools.product("abcdefghij", repeat=3):
        name = stem + a + b + c
        digest = hashlib.sha256(name.encode()).hexdigest()[:digits]
        if digest in seen:
            return seen[digest], name
        seen[digest] = name
    raise AssertionError("no collision found")


def test_a_listed_name_that_stands_for_two_readable_tools_is_refused_clearly(caller, monkeypatch):
    monkeypatch.setattr(formats, "_DIGEST_LENGTH", 1)  # make two names collide on purpose
    first, second = _colliding_names(1)
    for name in (first, second):
        tool = _echo_tool(name, caller["upstream"])
        grant_services.grant_create(actor=None, role=caller["role"], action="read", tool=tool)
    given = formats.provider_name(first, "gemini")
    assert given == formats.provider_name(second, "gemini")
    response = run(caller["client"], given)
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "tool_name_ambiguous" and "tool_id" in error["message"]
    refused = Execution.objects.get(pk=error["execution_id"])
    assert refused.tool_id is None and refused.reason_code == "tool_name_ambiguous"
