"""A real browser (Playwright driving Debian's Chromium, 1400 px wide) works the admin
a compliance team lives in: the dashboard from the home page, issuing a token (a reload
issues none), the integrity panel naming a tampered record, and the layout of the
pages that overflowed. Screenshots are kept under test-output/admin-browser/."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import pytest

from executions.models import Execution
from executions.services.pipeline import execution_request
from registry.models import ApiToken, VerificationRun
from registry.services import agents as agent_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from tests.executions.conftest import echo_caller
from tests.executions.test_approval_browser import CHROMIUM, EXPECT, _browser_available
from tests.registry.test_audit_chain import tamper

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

OUTPUT = Path(__file__).resolve().parents[2] / "test-output" / "admin-browser"
PASSWORD = "browser-pass-123"
WIDTH, HEIGHT = 1400, 900


@pytest.fixture
def browser():
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
            chromium = pw.chromium.launch(
                executable_path=CHROMIUM,
                args=[
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--disable-dev-shm-usage",
                ],
            )
            yield chromium
            chromium.close()
    finally:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


@contextmanager
def logged_in(browser, live_server, user):
    user.set_password(PASSWORD)
    user.save()
    page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", user.get_username())
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#content-main")
    try:
        yield page
    finally:
        page.close()


def shot(page, name: str) -> Path:
    path = OUTPUT / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 1000
    return path


def page_width(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


def test_a_reviewer_logs_in_and_opens_the_dashboard_from_the_home_page(
    browser, live_server, reviewer_user
):
    with logged_in(browser, live_server, reviewer_user) as page:
        assert page.locator("#integrity-panel").is_visible()
        shot(page, "01-index")
        page.click("text=Usage dashboard")
        page.wait_for_url("**/admin/dashboard/**")
        assert "Denied" in page.content()
        shot(page, "02-dashboard")


def test_issuing_a_token_from_the_agent_page_and_reloading_issues_one_token(
    browser, live_server, staff_user, owner
):
    role = role_services.role_create(actor=None, name="browser-callers")
    agent = agent_services.agent_create(
        actor=None, name="browser-bot", owner=owner, role_ids=[role.pk]
    )
    with logged_in(browser, live_server, staff_user) as page:
        page.goto(f"{live_server.url}/admin/registry/agent/{agent.pk}/change/")
        shot(page, "03-agent-page")
        # The roles picker's label sits beside the two lists on their left, where every
        # other label is, not floated to their right.
        label = page.locator("label[for=id_roles]").bounding_box()
        picker = page.locator(".selector").first.bounding_box()
        assert label["x"] + label["width"] <= picker["x"] + 1, (label, picker)
        page.click("#issue-token")
        page.wait_for_selector("#issued-tokens")
        raw = page.locator("#issued-tokens code").inner_text()
        assert raw.startswith("th_")
        assert page.locator("h1").count() == 1
        assert page.locator("text=Token issued").count() >= 1
        shot(page, "04-token-issued")
        page.reload()
        page.wait_for_selector("#no-token")
        assert raw not in page.content()
        shot(page, "05-token-page-reloaded")
    assert ApiToken.objects.filter(user=agent.user).count() == 1


def test_the_integrity_panel_names_a_tampered_record_after_verify_now(
    browser, live_server, reviewer_user, upstream, allow_loopback, eager_tasks
):
    caller = echo_caller(upstream, "browser-int", "echo_browser")
    done = execution_request(
        user=caller["agent"].user, tool_ref="echo_browser", arguments={"path": "echo"}, wait=True
    )
    assert done.status == "succeeded"
    tamper(
        "UPDATE executions_execution SET output_data = %s WHERE id = %s",
        ['{"status_code": 200, "data": "forged"}', done.pk],
    )
    with logged_in(browser, live_server, reviewer_user) as page:
        assert "Never verified" in page.locator("#integrity-panel").inner_text()
        page.click("#verify-now")
        page.wait_for_selector("#integrity-panel.integrity-failed")
        result = page.locator("#integrity-result").inner_text()
        assert "FAILED" in result and str(done.pk) in result
        shot(page, "06-index-verify-failed")
        page.click("#integrity-flagged a >> text=executions")
        page.wait_for_selector("#result_list")
        assert page.locator("#result_list tbody tr").count() == 1
        shot(page, "07-executions-altered-filter")
        page.goto(f"{live_server.url}/admin/executions/execution/{done.pk}/change/")
        banner = page.locator("#integrity-altered")
        assert banner.is_visible() and "Altered." in banner.inner_text()
        shot(page, "08-execution-altered")
        page.goto(f"{live_server.url}/admin/registry/auditevent/")
        assert page.locator("#integrity-panel").is_visible()
        shot(page, "09-audit-list")
    run = VerificationRun.objects.get()
    assert run.status == "failed"
    assert Execution.objects.filter(pk=done.pk).exists()


def test_the_pages_that_overflowed_fit_1400_pixels(browser, live_server, superuser):
    tool = tool_services.tool_create(
        actor=None,
        name="wide_tool",
        type="http",
        max_response_bytes=1048576,
        parameters=[
            {
                "name": f"parameter_with_a_long_name_{i}",
                "type": "string",
                "required": i % 2 == 0,
                "description": "A parameter whose description is long enough to widen a table "
                "cell well past what it needs, as real catalogs have.",
                "default": "a default value",
            }
            for i in range(6)
        ],
    )
    with logged_in(browser, live_server, superuser) as page:
        page.goto(f"{live_server.url}/admin/registry/tool/{tool.pk}/change/")
        assert page_width(page) <= WIDTH, page_width(page)
        size = page.locator("#id_max_response_bytes")
        assert size.evaluate("e => e.scrollWidth <= e.clientWidth"), "1048576 does not fit"
        shot(page, "10-tool-page")
        parameters = page.locator(".inline-group").first
        box = parameters.bounding_box()
        assert box["x"] + box["width"] <= WIDTH, box
        # Every column (to Delete?) fits; a wider catalog would scroll inside the group.
        assert parameters.evaluate("g => g.querySelector('table').offsetWidth <= g.clientWidth + 1")
        parameters.screenshot(path=str(OUTPUT / "10b-tool-parameters.png"))

        page.goto(f"{live_server.url}/admin/registry/tool/{tool.pk}/test-run/")
        assert page.locator("h1").count() == 1
        arguments = page.locator("#id_arguments").bounding_box()
        schema = page.locator(".test-run-schema").bounding_box()
        assert arguments["x"] + arguments["width"] <= schema["x"], (arguments, schema)
        assert page_width(page) <= WIDTH
        shot(page, "11-test-run")

        page.goto(f"{live_server.url}/admin/registry/role/add/")
        shot(page, "12-role-page")
        assert "Grant access (platform admin)" in page.content()
        assert "Can add approval" not in page.content()
