"""A secret config saved as JSON text is redacted like the same value saved as JSON.

The API takes a config's value as JSON, or as text holding JSON; the executor reads
both the same way, so the program or upstream receives the same secrets. What the
runner redacts must be those secrets as the executor reads them, not the text as it
was stored: otherwise a secret ``env`` saved as ``"{\\"API_TOKEN\\": \\"…\\"}"``
reaches the output, the artifact, the execution list and the database.
"""

from __future__ import annotations

import json
import uuid

import pytest

from executions.models import Execution
from registry.models import AuditEvent, Tool
from registry.services import tools as tool_services
from tests.executions.test_command_sandbox import PYTHON, require_sandbox
from tests.executions.test_command_tools import caller_for, execute

pytestmark = [pytest.mark.django_db(transaction=True)]


def canary(label: str) -> str:
    return f"sk-{label}-{uuid.uuid4().hex}"


def everything_about(client, reviewer_client, execution_id: str) -> str:
    """The execution as the caller and a reviewer see it (one, the list, its output
    artifact, the export), its row and every audit event."""
    pages = [
        client.get(f"/api/v1/executions/{execution_id}"),
        client.get("/api/v1/executions"),
        client.get(f"/api/v1/executions/{execution_id}/output"),
        reviewer_client.get("/api/v1/executions"),
        reviewer_client.get("/api/v1/executions/export?format=jsonl"),
    ]
    assert [p.status_code for p in pages] == [200] * 5
    bodies = [
        b"".join(p.streaming_content).decode() if p.streaming else p.content.decode() for p in pages
    ]
    assert execution_id in bodies[1]  # the list holds it
    rows = list(Execution.objects.values()) + list(AuditEvent.objects.values())
    return "\n".join(bodies) + json.dumps(rows, default=str)


def test_a_secret_env_given_as_json_text_never_reaches_the_output_artifact_list_or_database(
    settings, staff_client, reviewer_client, owner, eager_tasks
):
    require_sandbox()
    settings.TOOLHUB_COMMAND_ALLOWLIST = [PYTHON]
    secret = canary("env")
    created = staff_client.post(
        "/api/v1/tools",
        {
            "name": "prints_its_token",
            "type": "command",
            # Small enough that the whole output goes to an artifact.
            "max_response_bytes": 1024,
            "configs": [
                {
                    "config_key": "argv",
                    "config_value": [
                        PYTHON,
                        "-c",
                        "import os; t = os.environ['API_TOKEN']; print(t); print(t.upper()); "
                        "print('x' * 4000)",
                    ],
                },
                {
                    "config_key": "env",
                    "config_value": json.dumps({"API_TOKEN": secret}),
                    "is_secret": True,
                },
            ],
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    client = caller_for(Tool.objects.get(name="prints_its_token"), owner)

    done = execute(client, "prints_its_token", {})

    body = done.json()
    assert body["status"] == "succeeded", body
    execution = Execution.objects.get(pk=body["id"])
    assert execution.output_artifact  # the program did receive the variable, and printed it
    output = client.get(f"/api/v1/executions/{body['id']}/output")
    assert b"".join(output.streaming_content).decode().count("[REDACTED]") == 2
    seen = done.content.decode() + everything_about(client, reviewer_client, body["id"])
    assert secret not in seen and secret.upper() not in seen


@pytest.mark.parametrize(
    ("key", "route"),
    [("headers", "echo"), ("query_params", "echo"), ("headers", "echo-header/X-Vendor-Key")],
)
def test_a_secret_http_config_given_as_json_text_is_redacted_from_what_the_upstream_echoes(
    upstream, allow_loopback, eager_tasks, reviewer_client, owner, key, route
):
    secret = canary("http")
    name = "X-Vendor-Key" if key == "headers" else "vendor_key"
    tool = tool_services.tool_create(
        actor=None,
        name="echoes_its_key",
        type="http",
        timeout_seconds=5,
        configs=[
            {"config_key": "base_url", "config_value": upstream.url},
            {"config_key": "endpoint", "config_value": f"/{route}"},
            {"config_key": key, "config_value": json.dumps({name: secret}), "is_secret": True},
        ],
    )
    client = caller_for(tool, owner, name="http-agent")

    done = execute(client, "echoes_its_key", {})

    body = done.json()
    assert body["status"] in ("succeeded", "failed"), body
    sent = upstream.last.headers.get("x-vendor-key") or upstream.last.query["vendor_key"][0]
    assert sent == secret  # the upstream received it, and echoed it
    assert "[REDACTED]" in done.content.decode()
    seen = done.content.decode() + everything_about(client, reviewer_client, body["id"])
    assert secret not in seen
