"""Command tools in the registry and through the pipeline: who may define them, what a
definition may say, and calls run by a real worker on the ``command`` queue."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from django.urls import reverse

from executions.models import Execution
from executions.services import shared_state
from registry.models import AuditEvent, Tool
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import limits as limit_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.conftest import token_client
from tests.executions.test_command_sandbox import PYTHON, SH, require_sandbox
from tests.workers import celery_worker, wait_for

WORKER_ENV = {"TOOLHUB_COMMAND_ALLOWLIST": f"{PYTHON},{SH}"}


@pytest.fixture
def commands(settings):
    settings.TOOLHUB_COMMAND_ALLOWLIST = [PYTHON, SH]
    return settings


def command_tool(name="csv_stats", code="import sys; print(sys.argv[1:])", **fields):
    configs = fields.pop("configs", [])
    return tool_services.tool_create(
        actor=None,
        name=name,
        type="command",
        timeout_seconds=fields.pop("timeout_seconds", 10),
        parameters=fields.pop(
            "parameters",
            [
                {"name": "column", "type": "string", "required": True},
                {"name": "csv", "type": "string", "default": ""},
            ],
        ),
        configs=[
            {"config_key": "argv", "config_value": [PYTHON, "-c", code, "{column}"]},
            {"config_key": "stdin", "config_value": "csv"},
            *configs,
        ],
        **fields,
    )


def caller_for(tool: Tool, owner, name="cmd-agent"):
    role = role_services.role_create(actor=None, name=f"{name}-role")
    agent = agent_services.agent_create(actor=None, name=name, owner=owner, role_ids=[role.pk])
    grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    return token_client(agent.user)


def execute(client, tool: str, arguments: dict, wait=30):
    return client.post(
        "/api/v1/executions", {"tool": tool, "input_data": arguments, "wait": wait}, format="json"
    )


# Defining a command tool


@pytest.mark.django_db
def test_a_platform_admin_registers_a_command_tool_and_its_risk_defaults_to_high(
    commands, staff_client
):
    response = staff_client.post(
        "/api/v1/tools",
        {
            "name": "jq_filter",
            "type": "command",
            "parameters": [{"name": "filter", "type": "string", "required": True}],
            "configs": [
                {"config_key": "argv", "config_value": [SH, "-c", "echo {filter}"]},
                {"config_key": "memory_mb", "config_value": 64},
            ],
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["tool_metadata"] == {"risk": "high"}
    assert Tool.objects.get(name="jq_filter").is_high_risk


@pytest.mark.django_db
def test_an_executable_outside_the_allow_list_is_refused_on_save_naming_the_setting(
    commands, staff_client
):
    commands.TOOLHUB_COMMAND_ALLOWLIST = [SH]
    created = staff_client.post(
        "/api/v1/tools",
        {
            "name": "escape",
            "type": "command",
            "configs": [{"config_key": "argv", "config_value": ["/usr/bin/python3", "-c", "1"]}],
        },
        format="json",
    )
    assert created.status_code == 400
    detail = created.json()["error"]["details"][0]
    assert detail["field"] == "configs[0].config_value"
    assert "TOOLHUB_COMMAND_ALLOWLIST" in detail["message"]
    assert not Tool.objects.filter(name="escape").exists()

    tool = tool_services.tool_create(
        actor=None,
        name="shell_echo",
        type="command",
        configs=[{"config_key": "argv", "config_value": [SH, "-c", "echo"]}],
    )
    changed = staff_client.post(
        f"/api/v1/tools/{tool.pk}/configs",
        {"config_key": "argv", "config_value": ["/usr/bin/perl", "-e", "1"]},
        format="json",
    )
    assert changed.status_code == 400
    assert "TOOLHUB_COMMAND_ALLOWLIST" in json.dumps(changed.json())


@pytest.mark.django_db
def test_an_import_with_an_unlisted_executable_is_refused(commands, staff_client):
    content = (
        "tools:\n"
        "  - name: imported_cmd\n"
        "    type: command\n"
        "    configs:\n"
        '      argv: ["/usr/bin/env", "sh"]\n'
    )
    response = staff_client.post("/api/v1/tools/import", {"content": content}, format="json")
    assert response.status_code == 400, response.json()
    assert "TOOLHUB_COMMAND_ALLOWLIST" in json.dumps(response.json())
    assert not Tool.objects.filter(name="imported_cmd").exists()


@pytest.mark.django_db
def test_the_admin_refuses_an_unlisted_executable_and_shows_argv_limits_and_allow_list(
    commands, client, superuser
):
    client.force_login(superuser)
    data = {
        "name": "admin_cmd",
        "description": "",
        "type": "command",
        "version": "1.0.0",
        "is_active": "on",
        "tool_metadata": "{}",
        "timeout_seconds": 30,
        "max_retries": 0,
        "cache_ttl_seconds": 0,
        "max_response_bytes": 1048576,
        "parameters-TOTAL_FORMS": 0,
        "parameters-INITIAL_FORMS": 0,
        "configs-TOTAL_FORMS": 1,
        "configs-INITIAL_FORMS": 0,
        "configs-0-config_key": "argv",
        "configs-0-value": '["/usr/bin/perl", "-e", "1"]',
        "approval_condition": "{}",
        "approval_ttl_seconds": 86400,
        "grants-TOTAL_FORMS": 0,
        "grants-INITIAL_FORMS": 0,
        "rate_limits-TOTAL_FORMS": 0,
        "rate_limits-INITIAL_FORMS": 0,
    }
    refused = client.post(reverse("admin:registry_tool_add"), data)
    assert refused.status_code == 200
    assert "TOOLHUB_COMMAND_ALLOWLIST" in refused.content.decode()
    assert not Tool.objects.filter(name="admin_cmd").exists()

    tool = command_tool(configs=[{"config_key": "max_processes", "config_value": 5}])
    page = client.get(reverse("admin:registry_tool_change", args=[tool.pk])).content.decode()
    assert "Program, limits and sandbox" in page
    assert "/usr/bin/python3" in page and "max_processes" in page
    assert "lists the program" in page
    assert "an input starting with &#x27;-&#x27;" in page and "<code>refused</code>" in page


@pytest.mark.django_db
def test_only_platform_admins_create_or_change_command_tools(
    commands, manager_user, tool_managers_role
):
    from toolhub.exceptions import PermissionDenied

    tool = command_tool()
    grant_services.grant_create(actor=None, role=tool_managers_role, action="manage", tool=tool)
    with pytest.raises(PermissionDenied):
        tool_services.config_set(
            actor=manager_user, tool=tool, config_key="argv", config_value=[SH, "-c", "id"]
        )
    with pytest.raises(PermissionDenied):
        tool_services.config_set(
            actor=manager_user, tool=tool, config_key="max_processes", config_value=100
        )
    with pytest.raises(PermissionDenied):
        tool_services.parameter_create(actor=manager_user, tool=tool, name="extra")
    with pytest.raises(PermissionDenied):
        tool_services.tool_update(actor=manager_user, tool=tool, data={"timeout_seconds": 99})
    with pytest.raises(PermissionDenied):
        tool_services.tool_create(
            actor=manager_user,
            name="mine",
            type="command",
            configs=[{"config_key": "argv", "config_value": [SH]}],
        )
    other = tool_services.tool_create(actor=None, name="plain_http", type="http")
    grant_services.grant_create(actor=None, role=tool_managers_role, action="manage", tool=other)
    with pytest.raises(PermissionDenied):
        tool_services.tool_update(actor=manager_user, tool=other, data={"type": "command"})
    # Anyone who manages it may still switch it off.
    tool_services.tool_deactivate(actor=manager_user, tool=tool)
    assert Tool.objects.get(pk=tool.pk).is_active is False


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("env", {"LD_PRELOAD": "/workspace/x.so"}, "LD_PRELOAD"),
        ("env", {"PATH": "/workspace"}, "PATH"),
        ("env", {"API_TOKEN": "plain-text"}, "mark the env config secret"),
        ("workspace_files", {"../escape": "x"}, "no '..'"),
        ("workspace_files", {"/etc/passwd": "x"}, "no leading '/'"),
        ("argv", ["python3", "-c", "1"], "absolute path"),
        ("argv", ["{column}"], "absolute path"),
        ("max_processes", 0, "from 1"),
        ("memory_mb", 10**9, "at most"),
    ],
)
def test_configs_a_command_cannot_use_are_refused_on_save(commands, key, value, says):
    from toolhub.exceptions import InvalidInput

    tool = command_tool()
    with pytest.raises(InvalidInput) as refused:
        tool_services.config_set(actor=None, tool=tool, config_key=key, config_value=value)
    assert says in json.dumps(refused.value.details)


@pytest.mark.django_db
def test_a_command_tool_fails_closed_when_its_limits_cannot_be_checked(
    commands, owner, eager_tasks, monkeypatch
):
    import redis

    tool = command_tool()
    client = caller_for(tool, owner)
    limit_services.rate_limit_create(
        actor=None, tool=tool, scope="agent", max_requests=5, time_window_seconds=60
    )
    broken = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    monkeypatch.setattr(shared_state, "redis_client", lambda: broken)
    monkeypatch.setattr(shared_state.settings, "REDIS_URL", "redis://127.0.0.1:1/0", raising=False)
    refused = execute(client, "csv_stats", {"column": "a"}, wait=False)
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "controls_unavailable"


@pytest.mark.django_db
def test_registry_me_lists_command_tools_like_any_other(commands, owner):
    tool = command_tool()
    client = caller_for(tool, owner)
    listed = client.get("/api/v1/registry/me").json()
    assert "csv_stats" in json.dumps(listed)


@pytest.mark.django_db
def test_readyz_says_whether_command_tools_can_be_sandboxed(commands, client, settings):
    require_sandbox()
    settings.CELERY_TASK_ALWAYS_EAGER = True
    ready = client.get("/readyz").json()
    assert ready["checks"]["command_sandbox"] == "ok"
    settings.TOOLHUB_BWRAP = "/nonexistent/bwrap"
    missing = client.get("/readyz")
    assert missing.status_code == 503
    assert (
        "bubblewrap is not installed at /nonexistent/bwrap"
        in (missing.json()["checks"]["command_sandbox"])
    )
    settings.TOOLHUB_COMMAND_ALLOWLIST = []
    assert client.get("/readyz").json()["checks"]["command_sandbox"].startswith("not configured")


@pytest.mark.django_db(transaction=True)
def test_the_embedded_mode_runs_the_same_sandbox_in_process(commands, owner, eager_tasks):
    require_sandbox()
    tool = command_tool(code="import os; print(os.getuid(), os.listdir('/'))")
    client = caller_for(tool, owner)
    done = execute(client, "csv_stats", {"column": "a"})
    assert done.status_code == 200, done.json()
    body = done.json()
    assert body["status"] == "succeeded", body
    assert body["output_data"]["stdout"].startswith("65534 ")
    assert "workspace" in body["output_data"]["stdout"]


# Through a real worker on the command queue


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_an_agent_runs_a_command_tool_through_a_real_worker_recorded_and_audited(commands, owner):
    require_sandbox()
    code = (
        "import sys, csv\n"
        "rows = list(csv.DictReader(sys.stdin))\n"
        "print(sum(float(r[sys.argv[1]]) for r in rows))\n"
        "sys.stderr.write('rows=%d' % len(rows))\n"
    )
    tool = command_tool(code=code)
    client = caller_for(tool, owner)
    with celery_worker(extra_env=WORKER_ENV):
        done = execute(client, "csv_stats", {"column": "price", "csv": "price\n1.5\n2\n"})
        assert done.status_code == 200, done.json()
        body = done.json()
        assert body["status"] == "succeeded", body
        output = body["output_data"]
        assert output["stdout"] == "3.5\n" and output["stderr"] == "rows=2"
        assert output["exit_code"] == 0 and output["truncated"] is False
        assert output["duration_ms"] > 0

        failed = execute(client, "csv_stats", {"column": "missing", "csv": "price\n1\n"}).json()
        assert failed["status"] == "failed" and failed["error_type"] == "tool_error"
        assert failed["output_data"]["exit_code"] == 1
        assert "KeyError: 'missing'" in failed["error_message"]
    execution = Execution.objects.get(pk=body["id"])
    assert execution.tool_type == "command" and execution.worker
    assert execution.input_data == {"column": "price", "csv": "price\n1.5\n2\n"}
    actions = list(
        AuditEvent.objects.filter(target_id=body["id"])
        .order_by("id")
        .values_list("action", flat=True)
    )
    assert actions == ["execution.queued", "execution.succeeded"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_secret_env_value_never_reaches_the_stored_output(commands, owner):
    require_sandbox()
    secret = f"sk-{uuid.uuid4().hex}"
    tool = command_tool(
        code="import os, sys; print(os.environ['SERVICE_TOKEN']); sys.stderr.write(os.environ['SERVICE_TOKEN'])",
        configs=[
            {"config_key": "env", "config_value": {"SERVICE_TOKEN": secret}, "is_secret": True}
        ],
    )
    client = caller_for(tool, owner)
    with celery_worker(extra_env=WORKER_ENV):
        done = execute(client, "csv_stats", {"column": "a"})
    body = done.json()
    assert body["status"] == "succeeded", body
    assert body["output_data"]["stdout"] == "[REDACTED]\n"
    assert secret not in done.content.decode()
    row = Execution.objects.filter(pk=body["id"]).values().get()
    assert secret not in json.dumps(row, default=str)
    events = AuditEvent.objects.filter(target_id=body["id"]).values("before", "after")
    assert secret not in json.dumps(list(events), default=str)


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_command_tools_concurrency_limit_applies(commands, owner):
    require_sandbox()
    code = "import time; a = time.time(); time.sleep(1); print(a, time.time())"
    tool = command_tool(code=code, max_concurrency=1)
    client = caller_for(tool, owner)
    with celery_worker(extra_env=WORKER_ENV, concurrency=2):
        ids = [
            execute(client, "csv_stats", {"column": str(i)}, wait=False).json()["id"]
            for i in range(2)
        ]
        for execution_id in ids:
            wait_for(
                lambda i=execution_id: Execution.objects.get(pk=i).status == "succeeded",
                timeout=30,
            )
    spans = sorted(
        tuple(map(float, Execution.objects.get(pk=i).output_data["stdout"].split())) for i in ids
    )
    assert spans[0][1] <= spans[1][0], spans  # one after the other, never together


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_command_calls_go_to_the_command_queue_only(commands, owner):
    require_sandbox()
    tool = command_tool()
    client = caller_for(tool, owner)
    with celery_worker(extra_env=WORKER_ENV, queues="http,database,mcp,python,default"):
        queued = execute(client, "csv_stats", {"column": "a"}, wait=False).json()
        time.sleep(3)
        assert Execution.objects.get(pk=queued["id"]).status == "queued"
    with celery_worker(extra_env=WORKER_ENV, queues="command", purge=False):
        wait_for(lambda: Execution.objects.get(pk=queued["id"]).status == "succeeded", timeout=30)


@pytest.mark.django_db
def test_an_exported_command_tool_reimports_unchanged_and_keeps_its_secret_env_out(commands):
    import yaml

    from registry.importers.export import export_catalog
    from registry.importers.run import import_content

    secret = f"sk-{uuid.uuid4().hex}"
    command_tool(
        configs=[
            {"config_key": "env", "config_value": {"SERVICE_TOKEN": secret}, "is_secret": True},
            {"config_key": "max_processes", "config_value": 4},
        ]
    )
    text = export_catalog("tools")
    assert secret not in text
    exported = {t["name"]: t for t in yaml.safe_load(text)["tools"]}["csv_stats"]
    assert exported["type"] == "command" and exported["secret_configs"] == ["env"]
    assert exported["configs"]["argv"][0] == PYTHON
    report = import_content(text, actor=None)
    assert report.ok, report.text()
    assert report.counts()["updated"] == 0, report.text()


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["note.txt\n", "data\n/in.csv"])
def test_a_workspace_file_name_with_a_trailing_newline_is_refused_on_save(
    commands, staff_client, name
):
    tool = command_tool()
    response = staff_client.post(
        f"/api/v1/tools/{tool.pk}/configs",
        {"config_key": "workspace_files", "config_value": {name: "x"}},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert response.json()["error"]["details"][0]["field"] == "config_value"
    assert "not a relative file path" in response.json()["error"]["details"][0]["message"]
    assert not tool.configs.filter(config_key="workspace_files").exists()
