"""Django's Users page: every change a superuser makes there is in the audit trail."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from registry.models import AuditEvent
from registry.services import agents as agent_services
from registry.services import roles as role_services
from registry.services import tokens as token_services
from tests.conftest import make_role, token_client
from tests.factories import make_user

pytestmark = pytest.mark.django_db
User = get_user_model()


@pytest.fixture
def admin_client(superuser) -> Client:
    client = Client()
    client.force_login(superuser)
    return client


def change_form(user, **overrides) -> dict:
    data = {
        "username": user.username,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "email": user.email,
        "is_active": "on" if user.is_active else "",
        "is_staff": "on" if user.is_staff else "",
        "is_superuser": "on" if user.is_superuser else "",
        "groups": [str(g) for g in user.groups.values_list("pk", flat=True)],
        "user_permissions": [],
        "last_login_0": "",
        "last_login_1": "",
        "date_joined_0": "2026-01-01",
        "date_joined_1": "00:00:00",
    }
    data.update(overrides)
    return {k: v for k, v in data.items() if v != ""}


def test_making_someone_a_superuser_and_giving_roles_is_audited(admin_client, superuser):
    carol = make_user("carol")
    approvers = make_role("approvers")
    url = reverse("admin:auth_user_change", args=[carol.pk])
    response = admin_client.post(
        url, change_form(carol, is_staff="on", is_superuser="on", groups=[str(approvers.pk)])
    )
    assert response.status_code == 302, response.content.decode()[:3000]

    updated = AuditEvent.objects.get(action="user.updated", target_id=str(carol.pk))
    assert updated.actor_id == superuser.pk
    assert updated.before["is_superuser"] is False and updated.after["is_superuser"] is True
    assert updated.after["changed"] == ["is_staff", "is_superuser"]
    added = AuditEvent.objects.get(action="role.member_added", target_id=str(approvers.pk))
    assert added.after["member"] == "carol" and added.after["member_type"] == "auth.user"

    # Taking the role away is recorded too; an unchanged save records nothing.
    carol.refresh_from_db()
    admin_client.post(url, change_form(carol, groups=[]))
    assert AuditEvent.objects.filter(action="role.member_removed").count() == 1
    carol.refresh_from_db()
    events = AuditEvent.objects.count()
    assert admin_client.post(url, change_form(carol)).status_code == 302
    assert AuditEvent.objects.count() == events


def test_password_change_is_audited_without_the_hash(admin_client):
    dave = make_user("dave")
    url = reverse("admin:auth_user_password_change", args=[dave.pk])
    secret = "N3w-pass-phrase-for-dave"
    response = admin_client.post(
        url, {"password1": secret, "password2": secret, "usable_password": "true"}
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    event = AuditEvent.objects.get(action="user.password_changed", target_id=str(dave.pk))
    dave.refresh_from_db()
    text = json.dumps([event.before, event.after, event.target_repr])
    assert secret not in text and dave.password not in text


def test_creating_and_deleting_a_user_is_audited(admin_client):
    add = reverse("admin:auth_user_add")
    response = admin_client.post(
        add,
        {
            "username": "erin",
            "password1": "Erin-pass-phrase-123",
            "password2": "Erin-pass-phrase-123",
            "usable_password": "true",
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    erin = User.objects.get(username="erin")
    created = AuditEvent.objects.get(action="user.created", target_id=str(erin.pk))
    assert created.after["username"] == "erin" and "password" not in created.after

    delete = reverse("admin:auth_user_delete", args=[erin.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 302
    deleted = AuditEvent.objects.get(action="user.deleted", target_id=str(erin.pk))
    assert deleted.before["username"] == "erin"
    assert not User.objects.filter(username="erin").exists()


# --------------------------------------------------------------------------- lock-out guard


def test_the_last_platform_admin_cannot_demote_deactivate_or_delete_themselves(
    admin_client, superuser
):
    url = reverse("admin:auth_user_change", args=[superuser.pk])
    for change in ({"is_superuser": ""}, {"is_active": ""}, {"is_staff": ""}):
        response = admin_client.post(url, change_form(superuser, **change))
        assert response.status_code == 200  # the form again, with the reason
        assert "no active person who is a platform admin" in response.content.decode()
        superuser.refresh_from_db()
        assert superuser.is_superuser and superuser.is_active and superuser.is_staff
    delete = reverse("admin:auth_user_delete", args=[superuser.pk])
    page = admin_client.post(delete, {"post": "yes"})
    assert "no active person who is a platform admin" in page.content.decode()
    assert User.objects.filter(pk=superuser.pk).exists()
    assert not AuditEvent.objects.filter(action__in=["user.updated", "user.deleted"]).exists()

    # With a second platform admin (through a role), each of these is allowed.
    other = make_user("dora", is_staff=True)
    other.groups.add(make_role("platform", permissions=["registry.grant_tool"]))
    response = admin_client.post(url, change_form(superuser, is_superuser=""))
    assert response.status_code == 302, response.content.decode()[:2000]
    superuser.refresh_from_db()
    assert not superuser.is_superuser


def test_the_role_of_the_last_platform_admins_keeps_its_right(admin_client, superuser):
    platform = make_role("platform", permissions=role_services.PLATFORM_ADMIN_PERMISSIONS)
    dora = make_user("dora", is_staff=True)
    dora.groups.add(platform)
    superuser.is_superuser = False
    superuser.save()
    superuser.groups.add(platform)
    admin_client.force_login(superuser)
    role_url = reverse("admin:registry_role_change", args=[platform.pk])
    from registry.rights import PLATFORM_RIGHTS

    kept = [right.key for right in PLATFORM_RIGHTS if right.key != "grant_access"]
    response = admin_client.post(
        role_url, {"name": "platform", "description": "", "permissions": kept}
    )
    assert response.status_code == 200
    assert "no active person who is a platform admin" in response.content.decode()
    assert platform.permissions.filter(codename="grant_tool").exists()
    superuser.user_permissions.add(*role_services.permissions_by_label(["registry.delete_role"]))
    page = admin_client.post(
        reverse("admin:registry_role_delete", args=[platform.pk]), {"post": "yes"}
    )
    assert "no active person who is a platform admin" in page.content.decode()
    assert Group.objects.filter(pk=platform.pk).exists()

    # The API refuses the same changes with 409, and changes nothing. An agent in
    # the role does not count: the platform is administered by people.
    agent_services.agent_create(actor=None, name="ops-bot", owner=dora, role_ids=[platform.pk])
    api = token_client(dora)
    patched = api.patch(
        f"/api/v1/roles/{platform.pk}", {"permissions": ["registry.add_tool"]}, format="json"
    )
    assert patched.status_code == 409, patched.content
    assert patched.json()["error"]["code"] == "last_platform_admin"
    assert api.delete(f"/api/v1/roles/{platform.pk}").status_code == 409
    assert platform.permissions.filter(codename="grant_tool").exists()
    assert not AuditEvent.objects.filter(action__in=["role.updated", "role.deleted"]).exists()

    # A second person who is a platform admin lets it go.
    make_user("erin", is_staff=True, is_superuser=True)
    assert api.delete(f"/api/v1/roles/{platform.pk}").status_code == 204


def test_an_agents_user_is_never_staff_superuser_or_given_a_password(
    admin_client, superuser, owner
):
    agent = agent_services.agent_create(actor=None, name="analyst-bot", owner=owner)
    user = agent.user
    url = reverse("admin:auth_user_change", args=[user.pk])
    for change in ({"is_superuser": "on"}, {"is_staff": "on"}):
        response = admin_client.post(url, change_form(user, **change))
        assert response.status_code == 200
        assert "acts with its roles only" in response.content.decode()
    user.refresh_from_db()
    assert not user.is_superuser and not user.is_staff
    password = reverse("admin:auth_user_password_change", args=[user.pk])
    page = admin_client.post(
        password,
        {
            "password1": "An-agent-pass-123",
            "password2": "An-agent-pass-123",
            "usable_password": "true",
        },
    )
    assert page.status_code == 302
    user.refresh_from_db()
    assert not user.has_usable_password()
    # A page for an id that is no number is a 404, not a 500.
    assert admin_client.get("/admin/auth/user/abc/password/").status_code == 404
    # Its other fields (and a person's flags) stay editable.
    renamed = admin_client.post(url, change_form(user, first_name="Analyst"))
    assert renamed.status_code == 302, renamed.content.decode()[:2000]


def test_a_person_may_not_take_an_agents_name(admin_client):
    add = admin_client.post(
        reverse("admin:auth_user_add"),
        {
            "username": "agent.ghost",
            "password1": "Ghost-pass-phrase-123",
            "password2": "Ghost-pass-phrase-123",
            "usable_password": "true",
        },
    )
    assert add.status_code == 200 and "agents&#x27; users" in add.content.decode()
    assert not User.objects.filter(username="agent.ghost").exists()
    mallory = make_user("mallory")
    url = reverse("admin:auth_user_change", args=[mallory.pk])
    renamed = admin_client.post(url, change_form(mallory, username="agent.mallory"))
    assert renamed.status_code == 200
    mallory.refresh_from_db()
    assert mallory.username == "mallory"


def test_a_platform_admin_who_cannot_act_does_not_count(admin_client, superuser):
    """Neither staff (the admin) nor holding a live token: such a person could not
    administer anything, so the last one who can may not step down."""
    ghost = make_user("ghost-admin")  # not staff, no token
    ghost.groups.add(make_role("platform", permissions=["registry.grant_tool"]))
    url = reverse("admin:auth_user_change", args=[superuser.pk])
    refused = admin_client.post(url, change_form(superuser, is_staff=""))
    assert refused.status_code == 200
    assert "no active person who is a platform admin" in refused.content.decode()
    # With a live token the other one can act (over the API): now it is allowed.
    token_services.token_issue(actor=None, user=ghost)
    allowed = admin_client.post(url, change_form(superuser, is_staff=""))
    assert allowed.status_code == 302, allowed.content.decode()[:2000]


def test_the_last_platform_admin_keeps_password_login_unless_a_token_lets_them_act(
    admin_client, superuser
):
    url = reverse("admin:auth_user_password_change", args=[superuser.pk])
    off = {"usable_password": "false", "password1": "", "password2": "", "unset-password": "1"}
    page = admin_client.post(url, off)
    assert page.status_code == 200
    assert "no active person who is a platform admin" in page.content.decode()
    superuser.refresh_from_db()
    assert superuser.has_usable_password()

    # With a live API token they can still act: password login may go.
    from tests.factories import make_token

    make_token(superuser)
    assert admin_client.post(url, off).status_code == 302
    superuser.refresh_from_db()
    assert not superuser.has_usable_password()
    changed = AuditEvent.objects.get(action="user.password_changed", target_id=str(superuser.pk))
    assert changed.after == {"has_usable_password": False}


def test_a_refused_password_submission_is_not_audited_as_a_change(admin_client, superuser):
    url = reverse("admin:auth_user_password_change", args=[superuser.pk])
    make_user("erin", is_staff=True, is_superuser=True)  # the guard does not apply
    # Django redirects a request to disable the password without its button back to the form.
    response = admin_client.post(url, {"usable_password": "false"})
    assert response.status_code == 302
    superuser.refresh_from_db()
    assert superuser.has_usable_password()
    assert not AuditEvent.objects.filter(action="user.password_changed").exists()


def test_the_last_way_in_of_the_last_platform_admin_cannot_be_revoked(superuser):
    from registry.models import ApiToken
    from tests.factories import make_token
    from toolhub.exceptions import Conflict

    superuser.set_unusable_password()  # no admin login: the token is how they act
    superuser.save()
    make_token(superuser)
    token = ApiToken.objects.get(user=superuser)
    with pytest.raises(Conflict):
        token_services.token_revoke(actor=superuser, token=token)
    token.refresh_from_db()
    assert not token.is_revoked
    assert not AuditEvent.objects.filter(action="token.revoked").exists()

    # The admin's bulk action says so instead of failing.
    other = make_user("ops-root", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(other)
    other.set_unusable_password()  # no admin login either: the token is still the only way
    other.save()
    client.force_login(other)
    response = client.post(
        reverse("admin:registry_apitoken_changelist"),
        {"action": "revoke_tokens", "_selected_action": [str(token.pk)]},
        follow=True,
    )
    assert response.status_code == 200
    assert "no active person who is a platform admin" in response.content.decode()
    token.refresh_from_db()
    assert not token.is_revoked

    # A second admin who can log in lets it go.
    make_user("erin", is_staff=True, is_superuser=True)
    token_services.token_revoke(actor=superuser, token=token)
    token.refresh_from_db()
    assert token.is_revoked
