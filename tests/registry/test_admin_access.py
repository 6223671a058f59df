"""Agents, tokens, roles and grants through the admin: audited, tokens shown once."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from registry.models import Agent, ApiToken, AuditEvent, ToolGrant
from registry.models.tokens import hash_token
from registry.services import agents as agent_services
from registry.services import roles as role_services
from registry.services import tools as tool_services

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(staff_user) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


def test_create_agent_in_admin_with_roles(admin_client, owner, staff_user):
    role = role_services.role_create(actor=None, name="ops")
    response = admin_client.post(
        reverse("admin:registry_agent_add"),
        {
            "name": "admin-bot",
            "owner": owner.pk,
            "description": "",
            "is_active": "on",
            "roles": [role.pk],
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    agent = Agent.objects.get(name="admin-bot")
    assert list(agent.user.groups.all()) == [role]
    assert AuditEvent.objects.filter(action="agent.created", actor=staff_user).exists()
    assert AuditEvent.objects.filter(action="role.member_added", actor=staff_user).exists()


def test_issue_token_action_shows_it_once_and_revoke(admin_client, owner, staff_user):
    agent = agent_services.agent_create(actor=None, name="bot", owner=owner)
    response = admin_client.post(
        reverse("admin:registry_agent_changelist"),
        {"action": "issue_token", "_selected_action": [agent.pk]},
        follow=True,
    )
    assert response.redirect_chain == [(reverse("admin:registry_apitoken_issued"), 302)]
    raw = re.search(r"<code[^>]*>(th_[^<]+)</code>", response.content.decode()).group(1)
    token = ApiToken.objects.get(token_hash=hash_token(raw))
    assert token.user == agent.user
    detail = admin_client.get(
        reverse("admin:registry_agent_change", args=[agent.pk])
    ).content.decode()
    assert raw not in detail and token.prefix in detail
    listing = admin_client.get(reverse("admin:registry_apitoken_changelist")).content.decode()
    assert raw not in listing
    admin_client.post(
        reverse("admin:registry_apitoken_changelist"),
        {"action": "revoke_tokens", "_selected_action": [token.pk]},
    )
    token.refresh_from_db()
    assert token.is_revoked
    assert AuditEvent.objects.filter(action="token.revoked", actor=staff_user).exists()


def test_issue_token_for_a_person_in_admin(admin_client, staff_user):
    response = admin_client.post(
        reverse("admin:registry_apitoken_add"),
        {"user": staff_user.pk, "name": "laptop", "expires_in_days": 5},
        follow=True,
    )
    assert response.redirect_chain == [(reverse("admin:registry_apitoken_issued"), 302)]
    assert "th_" in response.content.decode()
    assert ApiToken.objects.filter(user=staff_user, name="laptop").exists()


def issued_tokens(html: str) -> list[str]:
    return re.findall(r"<code[^>]*>(th_[^<]+)</code>", html)


def test_the_agent_page_issues_a_token_shown_once_and_a_reload_issues_none(
    admin_client, owner, staff_user
):
    agent = agent_services.agent_create(actor=None, name="page-bot", owner=owner)
    page_url = reverse("admin:registry_agent_change", args=[agent.pk])
    issue_url = reverse("admin:registry_agent_issue_token", args=[agent.pk])
    page = admin_client.get(page_url).content.decode()
    assert f'action="{issue_url}"' in page and 'id="issue-token"' in page

    response = admin_client.post(issue_url)
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:registry_apitoken_issued")
    shown = admin_client.get(response["Location"])
    html = shown.content.decode()
    assert "no-store" in shown["Cache-Control"]
    [raw] = issued_tokens(html)
    assert ApiToken.objects.get(token_hash=hash_token(raw)).user == agent.user
    assert html.count("<h1>Token issued</h1>") == 1 and html.count("<h1>") == 1
    assert f'href="{page_url}"' in html  # back to the agent

    reloaded = admin_client.get(response["Location"]).content.decode()
    assert issued_tokens(reloaded) == [] and raw not in reloaded
    assert 'id="no-token"' in reloaded
    assert ApiToken.objects.filter(user=agent.user).count() == 1
    assert AuditEvent.objects.filter(action="token.issued", actor=staff_user).count() == 1


def test_issuing_from_the_agent_page_takes_a_post_and_the_right_to_change_agents(
    owner, reviewer_user
):
    agent = agent_services.agent_create(actor=None, name="guarded-bot", owner=owner)
    issue_url = reverse("admin:registry_agent_issue_token", args=[agent.pk])
    reviewer = Client()
    reviewer.force_login(reviewer_user)
    assert reviewer.get(issue_url).status_code == 405
    assert reviewer.post(issue_url).status_code == 403
    page = reviewer.get(reverse("admin:registry_agent_change", args=[agent.pk])).content.decode()
    assert 'id="issue-token"' not in page
    assert not ApiToken.objects.filter(user=agent.user).exists()


def test_a_token_not_shown_in_time_is_dropped(admin_client, owner, monkeypatch):
    from registry.admin import api_tokens

    agent = agent_services.agent_create(actor=None, name="late-bot", owner=owner)
    admin_client.post(reverse("admin:registry_agent_issue_token", args=[agent.pk]))
    monkeypatch.setattr(api_tokens, "SHOW_WITHIN_SECONDS", -1)
    html = admin_client.get(reverse("admin:registry_apitoken_issued")).content.decode()
    assert issued_tokens(html) == []


def test_grant_and_revoke_from_tool_page(admin_client, staff_user):
    tool = tool_services.tool_create(actor=None, name="fx", type="http")
    role = role_services.role_create(actor=None, name="traders")
    url = reverse("admin:registry_tool_change", args=[tool.pk])
    page = admin_client.get(url).content.decode()
    assert "Grants (roles that may read, execute or manage this tool)" in page
    data = {
        "name": "fx",
        "description": "",
        "type": "http",
        "version": "1.0.0",
        "is_active": "on",
        "tool_metadata": "{}",
        "timeout_seconds": 30,
        "max_retries": 0,
        "cache_ttl_seconds": 0,
        "max_response_bytes": 1048576,
        "parameters-TOTAL_FORMS": 0,
        "parameters-INITIAL_FORMS": 0,
        "configs-TOTAL_FORMS": 0,
        "configs-INITIAL_FORMS": 0,
        "approval_condition": "{}",
        "approval_ttl_seconds": 86400,
        "grants-TOTAL_FORMS": 1,
        "grants-INITIAL_FORMS": 0,
        "rate_limits-TOTAL_FORMS": 0,
        "rate_limits-INITIAL_FORMS": 0,
        "grants-0-role": role.pk,
        "grants-0-action": "execute",
        "grants-0-tool": tool.pk,
    }
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:3000]
    grant = ToolGrant.objects.get(tool=tool, role=role)
    assert grant.action == "execute" and grant.granted_by == staff_user
    role_page = admin_client.get(
        reverse("admin:registry_role_change", args=[role.pk])
    ).content.decode()
    assert "fx: execute" in role_page

    data.update(
        {
            "grants-INITIAL_FORMS": 1,
            "grants-0-id": grant.pk,
            "grants-0-DELETE": "on",
        }
    )
    response = admin_client.post(url, data)
    assert response.status_code == 302
    assert not ToolGrant.objects.filter(tool=tool).exists()
    assert AuditEvent.objects.filter(action="grant.revoked", actor=staff_user).exists()


def test_role_admin_refuses_tool_rights_as_raw_permissions(admin_client):
    page = admin_client.get(reverse("admin:registry_role_add")).content.decode()
    assert "Can execute tool" not in page
    assert "Grant access (platform admin)" in page


def test_the_role_page_offers_platform_rights_in_words_and_explains_grants(admin_client):
    page = admin_client.get(reverse("admin:registry_role_add")).content.decode()
    assert "Platform rights" in page
    assert "Give roles read, execute, manage or approve on tools" in page
    assert "that is given by grants, on each tool's page" in page
    for raw in ("Can add approval", "Can change audit chain head", "Executions | approval"):
        assert raw not in page


def test_the_role_form_offers_only_what_a_role_may_carry():
    from registry.admin.roles import RoleForm
    from registry.rights import permissions_of

    keys = [key for key, _ in RoleForm().fields["permissions"].choices]
    offered = set(permissions_of(keys))
    allowed = {
        f"{p.content_type.app_label}.{p.codename}" for p in role_services.role_permission_choices()
    }
    assert offered <= allowed  # every right stands for permissions a role may carry
    assert {"registry.grant_tool", "registry.review_all", "auth.view_user"} <= offered
    assert not {"auth.change_user", "auth.add_user", "admin.change_logentry"} & offered
    assert "registry.execute_tool" not in offered  # a right on tools: a grant
    assert set(role_services.PLATFORM_ADMIN_PERMISSIONS) - {"registry.view_tool"} <= offered


def test_saving_a_role_keeps_permissions_outside_the_rights_shown(admin_client):
    role = role_services.role_create(
        actor=None, name="mixed", permissions=["registry.review_all", "registry.delete_agent"]
    )
    url = reverse("admin:registry_role_change", args=[role.pk])
    page = admin_client.get(url).content.decode()
    assert "registry.delete_agent" in page  # listed under "Other permissions held"
    response = admin_client.post(
        url, {"name": "mixed", "description": "", "permissions": ["tokens"]}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    held = {p.codename for p in Group.objects.get(pk=role.pk).permissions.all()}
    assert held == {"delete_agent", "view_apitoken", "add_apitoken", "change_apitoken"}
