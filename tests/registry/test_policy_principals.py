"""``registry.policy`` for principals: agents, roles, memberships and tokens are a
platform admin's, whatever right a role shows; an agent's owner manages its tokens only."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from registry.models import ApiToken
from registry.rights import permissions_of
from registry.services import agents as agent_services
from registry.services import tokens as token_services
from tests.conftest import make_role, token_client
from tests.factories import make_user
from toolhub.exceptions import PermissionDenied

pytestmark = pytest.mark.django_db

PRINCIPAL_RIGHTS = ("agents", "tokens", "roles")


@pytest.fixture
def delegate(owner, platform_admin_role):
    """An agent whose role holds the rights that show agents, tokens and roles (and the
    permissions behind them), but not "Grant access"."""
    role = make_role("delegates", permissions_of(PRINCIPAL_RIGHTS))
    return agent_services.agent_create(actor=None, name="delegate", owner=owner, role_ids=[role.pk])


def test_an_agent_cannot_put_itself_in_the_platform_admin_role(delegate, platform_admin_role):
    roles = [*delegate.user.groups.all(), platform_admin_role]
    with pytest.raises(PermissionDenied):
        agent_services.agent_update(
            actor=delegate.user, agent=delegate, data={"role_ids": [r.pk for r in roles]}
        )
    client = token_client(delegate.user)
    response = client.patch(
        f"/api/v1/agents/{delegate.pk}", {"role_ids": [r.pk for r in roles]}, format="json"
    )
    assert response.status_code == 403
    assert response.json()["error"]["message"] == "Only platform admins may do this."
    assert not delegate.user.groups.filter(pk=platform_admin_role.pk).exists()


def test_an_agent_cannot_give_its_role_the_platform_admin_right(delegate):
    role = delegate.user.groups.get()
    client = token_client(delegate.user)
    response = client.patch(
        f"/api/v1/roles/{role.pk}", {"permissions": ["registry.grant_tool"]}, format="json"
    )
    assert response.status_code == 403
    assert not Group.objects.filter(pk=role.pk, permissions__codename="grant_tool").exists()


def test_an_agent_cannot_issue_a_token_for_another_agent_or_itself(delegate, owner):
    other = agent_services.agent_create(actor=None, name="other", owner=owner)
    for user in (other.user, delegate.user):
        with pytest.raises(PermissionDenied) as refused:
            token_services.token_issue(actor=delegate.user, user=user)
        assert refused.value.message == (
            "Only platform admins and the agent's owner manage its tokens."
        )
    assert not ApiToken.objects.filter(user=other.user).exists()


def test_the_owner_manages_her_agents_tokens_and_nothing_else_of_it(owner, delegate):
    token, _ = token_services.token_issue(actor=owner, user=delegate.user)
    token_services.token_revoke(actor=owner, token=token)
    with pytest.raises(PermissionDenied):
        agent_services.agent_update(actor=owner, agent=delegate, data={"description": "mine"})
    with pytest.raises(PermissionDenied):
        agent_services.agent_update(actor=owner, agent=delegate, data={"role_ids": []})
    with pytest.raises(PermissionDenied):
        token_services.token_issue(actor=owner, user=owner)  # a person's: an admin's


def test_an_inactive_owner_and_an_agent_set_as_owner_get_no_exception(owner, delegate):
    bot = agent_services.agent_create(actor=None, name="bot-owned-by-an-agent", owner=owner)
    bot.owner = delegate.user  # only a script could do this: the faces refuse agents
    bot.save(update_fields=["owner"])
    with pytest.raises(PermissionDenied):
        token_services.token_issue(actor=delegate.user, user=bot.user)
    owner.is_active = False
    owner.save(update_fields=["is_active"])
    with pytest.raises(PermissionDenied):
        token_services.token_issue(actor=owner, user=delegate.user)


def test_the_owners_refusal_through_the_api_keeps_its_message(owner, delegate):
    stranger = token_client(make_user("stranger-sam", is_staff=True))
    # A person who does not own the agent does not see it at all.
    assert stranger.post(f"/api/v1/agents/{delegate.pk}/tokens", {}).status_code == 404
    reviewer_like = token_client(delegate.user)
    response = reviewer_like.post(f"/api/v1/agents/{delegate.pk}/tokens", {}, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["message"] == (
        "Only platform admins and the agent's owner manage its tokens."
    )


@pytest.fixture
def delegate_person(db):
    """A person (staff) whose role holds the rights that show agents, tokens and roles."""
    user = make_user("dana-delegate", is_staff=True)
    user.groups.add(make_role("person-delegates", permissions_of(PRINCIPAL_RIGHTS)))
    client = Client()
    client.force_login(user)
    return client


def test_the_admin_shows_agents_tokens_and_roles_read_only_to_those_rights(delegate_person, owner):
    agent = agent_services.agent_create(actor=None, name="seen-bot", owner=owner)
    role = make_role("seen-role")
    for name in ("agent", "apitoken", "role"):
        assert delegate_person.get(reverse(f"admin:registry_{name}_changelist")).status_code == 200
        assert delegate_person.get(reverse(f"admin:registry_{name}_add")).status_code == 403
    page = delegate_person.get(reverse("admin:registry_agent_change", args=[agent.pk]))
    assert page.status_code == 200 and 'id="issue-token"' not in page.content.decode()
    issue = reverse("admin:registry_agent_issue_token", args=[agent.pk])
    assert delegate_person.post(issue).status_code == 403
    changed = delegate_person.post(
        reverse("admin:registry_role_change", args=[role.pk]),
        {"name": "seen-role", "description": "", "permissions": ["grant_access"]},
    )
    assert changed.status_code == 403
    assert not ApiToken.objects.filter(user=agent.user).exists()
    assert not Group.objects.filter(pk=role.pk, permissions__codename="grant_tool").exists()
