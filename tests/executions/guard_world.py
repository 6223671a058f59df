"""An agent calling a real upstream through a guarded http tool (shared by guard tests)."""

from __future__ import annotations

from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import guards as guard_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.conftest import token_client
from tests.factories import make_user


def guarded_world(upstream, label: str) -> dict:
    """An agent with ``execute`` on ``fetch``: GET {upstream}/{path} with the other
    arguments (``body``, ``type``, ``text``, ``times``, ``with``) as the query."""
    owner = make_user(f"{label}-owner")
    role = role_services.role_create(actor=None, name=f"{label}-callers")
    agent = agent_services.agent_create(
        actor=None, name=f"{label}-agent", owner=owner, role_ids=[role.pk]
    )
    tool = tool_services.tool_create(
        actor=None,
        name="fetch",
        type="http",
        timeout_seconds=30,
        max_response_bytes=4 * 1024 * 1024,
        parameters=[
            {"name": "path", "type": "string", "required": True},
            *(
                {"name": name, "type": "string"}
                for name in ("body", "type", "text", "times", "with")
            ),
        ],
        configs=[
            {"config_key": "base_url", "config_value": upstream.url},
            {"config_key": "endpoint", "config_value": "/{path}"},
        ],
    )
    grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    return {"client": token_client(agent.user), "tool": tool, "upstream": upstream}


def add_guard(tool=None, **fields):
    return guard_services.guard_create(actor=None, tool=tool, **fields)


def call(world: dict, **arguments):
    return world["client"].post(
        "/api/v1/executions",
        {"tool": "fetch", "input_data": arguments, "wait": 60},
        format="json",
    )


def answer_of(world: dict, **arguments) -> dict:
    response = call(world, **arguments)
    assert response.status_code == 200, response.json()
    return response.json()


def decisions_of(answer: dict, guard: str) -> list[dict]:
    return [d for d in answer["guard_decisions"] if d["guard"] == guard]
