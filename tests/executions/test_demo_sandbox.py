"""The demo's HTTP tools succeed offline: they call the demo sandbox on loopback,
with the egress guard opened for that one address and closed everywhere else."""

from __future__ import annotations

import io
import threading

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
from django.core.wsgi import get_wsgi_application
from django.test import Client
from django.urls import Resolver404, resolve

from executions.models import Approval
from registry import demo
from registry.models import Tool, ToolConfig
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import tools as tool_services
from tests.conftest import token_client
from toolhub import urls as toolhub_urls  # imported now, before any test turns demo mode on

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.demo_sandbox_urls")]


@pytest.fixture(scope="module")
def _toolhub_server():
    """ToolHub's WSGI application served on 127.0.0.1, as runserver serves the demo."""
    server = ThreadedWSGIServer(("127.0.0.1", 0), WSGIRequestHandler)
    server.set_app(get_wsgi_application())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def sandbox(_toolhub_server, settings, eager_tasks):
    """The demo as ./scripts/demo runs it: sandbox mounted, catalog pointed at it, and
    the egress guard open for the sandbox's address only."""
    settings.TOOLHUB_DEMO_SANDBOX = True
    settings.TOOLHUB_EGRESS_ALLOW = ["127.0.0.1"]
    settings.ALLOWED_HOSTS = [
        "127.0.0.1",
        "testserver",
    ]  # the demo's DEBUG default, and the test client
    url = f"{_toolhub_server}/demo-sandbox"
    call_command("seed_demo", sandbox_url=url, stdout=io.StringIO())
    return url


def demo_agent(owner, role: str):
    agent = agent_services.agent_create(
        actor=None,
        name=f"{role}-bot",
        owner=owner,
        role_ids=[Group.objects.get(name=role).pk],
    )
    return token_client(agent.user)


def run(client, tool: str, input_data: dict):
    return client.post(
        "/api/v1/executions",
        {"tool": tool, "input_data": input_data, "wait": True},
        format="json",
    )


CALLS = [
    (
        "fintech-analyst",
        "transaction_insights",
        {"account_id": "ACC-1001"},
        lambda out: out["account_id"] == "ACC-1001" and out["period"] == "30d",
    ),
    (
        "fintech-analyst",
        "earnings_call_transcript_fetcher",
        {"ticker": "MSFT", "year": 2024, "quarter": 2},
        lambda out: "MSFT's Q2 2024 earnings call" in out["transcript"],
    ),
    (
        "fintech-analyst",
        "african_country_directory",
        {"fields": "name,capital"},
        lambda out: (
            {"name": {"common": "Kenya", "official": "Republic of Kenya"}, "capital": ["Nairobi"]}
            in out
        ),
    ),
    (
        "customer-support",
        "account_balance_lookup",
        {"account_id": "ACC-1001", "customer_token": "session-abc"},
        lambda out: isinstance(out["balance"], float) and out["currency"] in demo_currencies(),
    ),
]


def demo_currencies():
    from toolhub.demo_sandbox import CURRENCIES

    return CURRENCIES


def body_of(execution: dict):
    """The upstream's parsed answer inside an HTTP tool's output."""
    return execution["output_data"]["data"]


@pytest.mark.parametrize(("role", "tool", "input_data", "check"), CALLS, ids=[c[1] for c in CALLS])
def test_a_demo_http_tool_succeeds_against_the_sandbox(
    sandbox, owner, role, tool, input_data, check
):
    response = run(demo_agent(owner, role), tool, input_data)
    assert response.status_code == 200, response.json()
    execution = response.json()
    assert execution["status"] == "succeeded", execution
    assert execution["output_data"]["status_code"] == 200
    assert check(body_of(execution)), body_of(execution)


def test_every_demo_http_tool_calls_the_sandbox(sandbox):
    http_tools = {spec["name"] for spec in demo.TOOLS if spec["type"] == "http"}
    base_urls = dict(
        ToolConfig.objects.filter(tool__name__in=http_tools, config_key="base_url").values_list(
            "tool__name", "plain_value"
        )
    )
    assert base_urls == dict.fromkeys(http_tools, sandbox)


def test_the_bearer_probe_succeeds_with_its_placeholder_token_and_echoes_no_secret(sandbox, owner):
    probe = Tool.objects.get(name="bearer_protected_resource_probe")
    analysts = Group.objects.get(name="fintech-analyst")
    grant_services.grant_create(actor=None, role=analysts, action="execute", tool=probe)
    execution = run(demo_agent(owner, "fintech-analyst"), probe.name, {}).json()
    assert execution["status"] == "succeeded", execution
    assert body_of(execution) == {"authenticated": True}
    assert demo.PLACEHOLDER_SECRET not in str(execution)


@pytest.mark.django_db(transaction=True)  # the approved call is queued on commit
def test_a_payment_runs_after_a_person_approves_it(sandbox, owner, approver_user, approvers_role):
    payment = Tool.objects.get(name="initiate_payment")
    grant_services.grant_create(actor=None, role=approvers_role, action="approve", tool=payment)
    support = demo_agent(owner, "customer-support")
    pending = run(
        support,
        payment.name,
        {"from_account": "ACC-1001", "to_account": "ACC-2002", "amount": 25, "currency": "EUR"},
    ).json()
    assert pending["status"] == "pending_approval", pending
    approval = Approval.objects.get(execution_id=pending["id"])
    decided = token_client(approver_user).post(
        f"/api/v1/approvals/{approval.pk}/approve", {}, format="json"
    )
    assert decided.status_code == 200, decided.json()
    execution = support.get(f"/api/v1/executions/{pending['id']}").json()
    assert execution["status"] == "succeeded", execution
    assert execution["output_data"]["status_code"] == 201
    assert body_of(execution)["payment_id"].startswith("PAY-")


def test_the_egress_guard_stays_closed_for_every_other_loopback_address(sandbox, owner):
    # The same sandbox, reached through 127.0.0.2 (loopback too, but not the listed address).
    other = sandbox.replace("127.0.0.1", "127.0.0.2")
    tool = Tool.objects.get(name="transaction_insights")
    tool_services.config_set(actor=None, tool=tool, config_key="base_url", config_value=other)
    execution = run(
        demo_agent(owner, "fintech-analyst"), tool.name, {"account_id": "ACC-1001"}
    ).json()
    assert execution["status"] == "failed", execution
    assert execution["error_type"] == "egress_denied", execution


def test_the_sandbox_answers_the_same_data_every_time(sandbox, settings):
    client = Client()
    path = "/demo-sandbox/accounts/ACC-1001/insights?period=90d"
    first = client.get(path, HTTP_X_API_KEY="k")
    assert first.status_code == 200
    assert client.get(path, HTTP_X_API_KEY="k").json() == first.json()
    assert client.get(path).status_code == 401  # the credential is still required


def test_the_sandbox_is_not_mounted_outside_demo_mode():
    # toolhub.urls was imported (above) with TOOLHUB_DEMO_SANDBOX off, as in every deployment.
    with pytest.raises(Resolver404):
        resolve("/demo-sandbox/bearer", urlconf=toolhub_urls)
