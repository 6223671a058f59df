"""Rate-limit rules for all tools are managed in the admin (audited); reviewers read."""

from __future__ import annotations

import pytest
from django.test import Client

from registry.models import AuditEvent, RateLimitRule
from tests.factories import ToolFactory

pytestmark = pytest.mark.django_db

URL = "/admin/registry/ratelimitrule/"


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def form(**overrides) -> dict:
    data = {
        "tool": "",
        "scope": "global",
        "max_requests": "100",
        "time_window_seconds": "60",
        "is_active": "on",
        "description": "everyone together",
    }
    data.update(overrides)
    return data


def test_platform_admin_adds_changes_and_deletes_an_all_tools_rule(staff_user):
    client = logged_in(staff_user)
    assert client.get(URL).status_code == 200
    added = client.post(f"{URL}add/", form())
    assert added.status_code == 302, added.content.decode()[:2000]
    rule = RateLimitRule.objects.get()
    assert rule.tool is None and rule.max_requests == 100
    listing = client.get(URL).content.decode()
    assert "all tools" in listing
    changed = client.post(f"{URL}{rule.pk}/change/", form(max_requests="5"))
    assert changed.status_code == 302
    assert RateLimitRule.objects.get().max_requests == 5
    deleted = client.post(f"{URL}{rule.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 302 and not RateLimitRule.objects.exists()
    actions = list(
        AuditEvent.objects.filter(action__startswith="rate_limit.")
        .order_by("id")
        .values_list("action", "actor_name")
    )
    assert actions == [
        ("rate_limit.created", "alice-staff"),
        ("rate_limit.updated", "alice-staff"),
        ("rate_limit.deleted", "alice-staff"),
    ]


def test_bad_values_are_form_errors(staff_user):
    client = logged_in(staff_user)
    response = client.post(f"{URL}add/", form(max_requests="0", time_window_seconds="-5"))
    assert response.status_code == 200
    assert response.context["adminform"].form.errors
    assert not RateLimitRule.objects.exists()


def test_a_rule_for_one_tool_is_listed_with_its_tool(staff_user):
    tool = ToolFactory(name="metered")
    client = logged_in(staff_user)
    assert client.post(f"{URL}add/", form(tool=str(tool.pk))).status_code == 302
    assert RateLimitRule.objects.get().tool == tool
    assert "metered" in client.get(URL).content.decode()


def test_reviewers_read_and_change_nothing(reviewer_user, staff_user):
    logged_in(staff_user).post(f"{URL}add/", form())
    rule = RateLimitRule.objects.get()
    client = logged_in(reviewer_user)
    assert client.get(URL).status_code == 200
    assert client.get(f"{URL}{rule.pk}/change/").status_code == 200  # the view page
    assert client.post(f"{URL}{rule.pk}/change/", form(max_requests="1")).status_code == 403
    assert client.get(f"{URL}add/").status_code == 403
    assert RateLimitRule.objects.get().max_requests == 100
