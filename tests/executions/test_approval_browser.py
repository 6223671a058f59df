"""A real browser (Playwright driving Debian's Chromium) works the admin approval queue."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from executions.models import Approval, Execution
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.conftest import token_client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

CHROMIUM = "/usr/bin/chromium"
OUTPUT = Path(__file__).resolve().parents[2] / "test-output" / "approval-browser"
EXPECT = os.environ.get("TOOLHUB_TEST_EXPECT_SERVICES", "").lower() == "true"


def _browser_available() -> str | None:
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "the playwright package is not installed"
    if not shutil.which(CHROMIUM):
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    return None


@pytest.fixture
def pending_calls(upstream, allow_loopback, eager_tasks, owner, approver_user, approvers_role):
    approver = approver_user
    approver.set_password("approver-pass-123")
    approver.save()
    role = role_services.role_create(actor=None, name="callers")
    approvers = approvers_role
    agent = agent_services.agent_create(actor=None, name="pay-bot", owner=owner, role_ids=[role.pk])
    ids = {}
    for name in ("pay_supplier", "refund_customer"):
        tool = tool_services.tool_create(
            actor=None,
            name=name,
            type="http",
            requires_approval=True,
            tool_metadata={"risk": "high", "safety": "destructive"},
            parameters=[
                {"name": "amount", "type": "number", "required": True},
                {"name": "currency", "type": "string", "default": "EUR"},
            ],
            configs=[
                {"config_key": "base_url", "config_value": upstream.url},
                {"config_key": "endpoint", "config_value": "/echo"},
            ],
        )
        grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
        grant_services.grant_create(actor=None, role=approvers, action="approve", tool=tool)
        response = token_client(agent.user).post(
            "/api/v1/executions",
            {"tool": name, "input_data": {"amount": 1250.5}, "wait": True},
            format="json",
        )
        assert response.status_code == 202
        ids[name] = response.json()["id"]
    return ids


def test_approver_approves_one_and_rejects_one_in_the_browser(live_server, pending_calls):
    problem = _browser_available()
    if problem:
        if EXPECT:
            pytest.fail(f"Browser test expected in CI but {problem}.")
        pytest.skip(problem)
    from playwright.sync_api import sync_playwright

    OUTPUT.mkdir(parents=True, exist_ok=True)
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # the live server thread uses the ORM
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM,
                args=[
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--disable-dev-shm-usage",
                ],
            )
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{live_server.url}/admin/login/?next=/admin/executions/approval/queue/")
            page.fill("#id_username", "ann-approver")
            page.fill("#id_password", "approver-pass-123")
            page.click("input[type=submit]")
            page.wait_for_selector("#approval-queue")
            assert page.locator("#approval-queue tbody tr").count() == 2
            row = page.locator("tr[data-tool=pay_supplier]")
            assert "The tool requires approval for every call" in row.locator(".why").inner_text()
            assert "currency" not in row.locator("pre.arguments-sent").inner_text()
            assert '"EUR"' in row.locator("pre.arguments-defaults").inner_text()
            assert page.evaluate("document.documentElement.scrollWidth") <= 1400
            page.screenshot(path=str(OUTPUT / "approval-queue.png"), full_page=True)

            page.locator("tr[data-tool=pay_supplier] .approve-button").click()
            page.wait_for_selector("text=Approved the call of pay_supplier")
            row = page.locator("tr[data-tool=refund_customer]")
            row.locator(".reason-input").fill("Duplicate refund request")
            row.locator(".reject-button").click()
            page.wait_for_selector("text=Rejected the call of refund_customer")
            page.wait_for_selector("#queue-empty")
            history = page.locator("#approval-history").inner_text()
            assert "Duplicate refund request" in history
            page.screenshot(path=str(OUTPUT / "approval-queue-after.png"), full_page=True)
            browser.close()
    finally:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)

    paid = Execution.objects.get(pk=pending_calls["pay_supplier"])
    refused = Execution.objects.get(pk=pending_calls["refund_customer"])
    assert paid.status == "succeeded"
    assert refused.status == "rejected"
    assert Approval.objects.get(execution=refused).reason == "Duplicate refund request"
    assert Approval.objects.get(execution=paid).decided_by_name == "ann-approver"
    assert (OUTPUT / "approval-queue.png").stat().st_size > 1000
