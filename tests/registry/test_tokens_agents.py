"""Agents, tokens, roles and grants: lifecycle, audit, and the create_agent command."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from registry.models import Agent, ApiToken, AuditEvent, ToolGrant
from registry.models.tokens import hash_token
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services import tokens as token_services
from registry.services import tools as tool_services
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def bearer(raw: str, scheme: str = "Bearer") -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"{scheme} {raw}")
    return client


@pytest.fixture
def agent(owner):
    return agent_services.agent_create(actor=None, name="billing-bot", owner=owner)


class TestTokens:
    def test_database_never_holds_a_usable_token(self, agent):
        token, raw = token_services.token_issue(actor=None, user=agent.user, name="t")
        assert raw.startswith("th_") and len(raw) > 40
        with connection.cursor() as cursor:
            cursor.execute("SELECT * FROM registry_apitoken")
            rows = str(cursor.fetchall())
        assert raw not in rows and raw[10:] not in rows
        assert token.token_hash == hash_token(raw) and token.prefix == raw[:10]
        assert raw not in str(list(AuditEvent.objects.values("before", "after", "target_repr")))

    def test_bearer_and_token_schemes_and_last_used(self, agent):
        token, raw = token_services.token_issue(actor=None, user=agent.user)
        assert token.last_used_at is None
        assert bearer(raw).get("/api/v1/tools").status_code == 200
        assert bearer(raw, "Token").get("/api/v1/tools").status_code == 200
        token.refresh_from_db()
        assert token.last_used_at is not None

    @pytest.mark.parametrize(
        ("header", "message"),
        [
            ("Bearer th_not-a-real-token", "Invalid token."),
            ("Bearer", "Malformed Authorization header"),
            ("Bearer a b", "Malformed Authorization header"),
        ],
    )
    def test_bad_tokens_are_401_with_a_clear_message(self, header, message):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=header)
        response = client.get("/api/v1/tools")
        assert response.status_code == 401
        assert message in response.json()["error"]["message"]

    def test_revoked_expired_and_inactive_are_refused(self, agent, owner):
        _, raw = token_services.token_issue(actor=owner, user=agent.user)
        token, raw2 = token_services.token_issue(actor=owner, user=agent.user)
        token_services.token_revoke(actor=owner, token=token)
        assert "revoked" in bearer(raw2).get("/api/v1/tools").json()["error"]["message"]
        expiring, raw3 = token_services.token_issue(
            actor=owner, user=agent.user, expires_at=timezone.now() + timedelta(seconds=60)
        )
        assert bearer(raw3).get("/api/v1/tools").status_code == 200
        ApiToken.objects.filter(pk=expiring.pk).update(
            expires_at=timezone.now() - timedelta(seconds=1)
        )
        assert "expired" in bearer(raw3).get("/api/v1/tools").json()["error"]["message"]
        # Deactivating is a platform admin's (agent.write), not the owner's.
        agent_services.agent_update(actor=None, agent=agent, data={"is_active": False})
        response = bearer(raw).get("/api/v1/tools")
        assert response.status_code == 401 and "inactive" in response.json()["error"]["message"]
        actions = list(AuditEvent.objects.values_list("action", flat=True))
        assert {"token.issued", "token.revoked", "agent.deactivated"} <= set(actions)

    def test_an_agent_whose_owner_is_deactivated_is_refused(self, agent, owner):
        _, raw = token_services.token_issue(actor=None, user=agent.user)
        assert bearer(raw).get("/api/v1/tools").status_code == 200
        owner.is_active = False
        owner.save(update_fields=["is_active"])
        response = bearer(raw).get("/api/v1/tools")
        assert response.status_code == 401
        assert "owner of this token's agent is deactivated" in response.json()["error"]["message"]
        # Given a new owner, it works again.

        agent_services.agent_update(actor=None, agent=agent, data={"owner": make_user("new-owner")})
        assert bearer(raw).get("/api/v1/tools").status_code == 200

    def test_token_lifetime_is_capped_when_the_operator_says_so(self, agent, settings):
        settings.TOOLHUB_TOKEN_MAX_DAYS = 30
        token, _ = token_services.token_issue(actor=None, user=agent.user)
        assert token.expires_at is not None
        days = (token.expires_at - timezone.now()).total_seconds() / 86400
        assert 29.9 < days <= 30
        # A later expiry is brought within the cap (the admin's 90-day default included).
        capped, _ = token_services.token_issue(
            actor=None, user=agent.user, expires_at=timezone.now() + timedelta(days=90)
        )
        assert (capped.expires_at - timezone.now()).total_seconds() / 86400 <= 30
        settings.TOOLHUB_TOKEN_MAX_DAYS = None
        settings.TOOLHUB_TOKEN_DEFAULT_DAYS = 0  # no default lifetime either: until revoked
        forever, raw = token_services.token_issue(actor=None, user=agent.user)
        assert forever.expires_at is None
        # Set later, the cap also ends tokens issued before it, counted from their issue.
        ApiToken.objects.filter(pk=forever.pk).update(
            created_at=timezone.now() - timedelta(days=40)
        )
        assert bearer(raw).get("/api/v1/tools").status_code == 200
        settings.TOOLHUB_TOKEN_MAX_DAYS = 30
        expired = bearer(raw).get("/api/v1/tools")
        assert expired.status_code == 401 and "expired" in expired.json()["error"]["message"]

    def test_expiry_in_the_past_is_refused(self, agent):
        with pytest.raises(Exception, match="future"):
            token_services.token_issue(actor=None, user=agent.user, expires_at=timezone.now())

    def test_revoking_twice_audits_once(self, agent):
        token, _ = token_services.token_issue(actor=None, user=agent.user)
        token_services.token_revoke(actor=None, token=token)
        token_services.token_revoke(actor=None, token=token)
        assert AuditEvent.objects.filter(action="token.revoked").count() == 1


class TestApi:
    def test_admin_creates_agent_issues_token_and_agent_uses_it(self, staff_client, owner):
        role = role_services.role_create(actor=None, name="analysts")
        response = staff_client.post(
            "/api/v1/agents",
            {"name": "report-bot", "owner": "owner-olga", "role_ids": [role.pk]},
            format="json",
        )
        assert response.status_code == 201, response.json()
        agent_id = response.json()["id"]
        assert response.json()["roles"] == [{"id": role.pk, "name": "analysts"}]
        issued = staff_client.post(
            f"/api/v1/agents/{agent_id}/tokens",
            {"name": "prod", "expires_in_days": 30},
            format="json",
        )
        assert issued.status_code == 201
        raw = issued.json()["token"]
        listed = staff_client.get(f"/api/v1/agents/{agent_id}/tokens").json()
        assert raw not in str(listed) and listed["results"][0]["prefix"] == raw[:10]
        assert bearer(raw).get("/api/v1/registry/me").status_code == 200
        token_id = listed["results"][0]["id"]
        revoked = staff_client.delete(f"/api/v1/agents/{agent_id}/tokens/{token_id}")
        assert revoked.json()["status"] == "revoked"
        assert bearer(raw).get("/api/v1/registry/me").status_code == 401
        membership = AuditEvent.objects.get(action="role.member_added")
        assert membership.actor_name == "alice-staff" and membership.after["member"] == "report-bot"

    def test_agent_errors(self, staff_client, owner):
        bad = staff_client.post("/api/v1/agents", {"name": "x", "owner": "ghost"}, format="json")
        assert bad.status_code == 400 and bad.json()["error"]["details"][0]["field"] == "owner"
        bad = staff_client.post(
            "/api/v1/agents", {"name": "bad name!", "owner": "owner-olga"}, format="json"
        )
        assert bad.status_code == 400 and bad.json()["error"]["details"][0]["field"] == "name"
        bad = staff_client.post(
            "/api/v1/agents",
            {"name": "ok", "owner": "owner-olga", "role_ids": [999999]},
            format="json",
        )
        assert bad.status_code == 400 and bad.json()["error"]["details"][0]["field"] == "role_ids"
        ok = staff_client.post(
            "/api/v1/agents", {"name": "dup", "owner": "owner-olga"}, format="json"
        )
        assert ok.status_code == 201
        dup = staff_client.post(
            "/api/v1/agents", {"name": "dup", "owner": "owner-olga"}, format="json"
        )
        assert dup.status_code == 409

    def test_owner_manages_own_agent_tokens(self, owner, agent):
        _, raw = token_services.token_issue(actor=None, user=owner)
        client = bearer(raw)
        assert client.get("/api/v1/agents").json()["count"] == 1
        issued = client.post(f"/api/v1/agents/{agent.pk}/tokens", {}, format="json")
        assert issued.status_code == 201
        # but the owner cannot change the agent's roles
        assert (
            client.patch(f"/api/v1/agents/{agent.pk}", {"role_ids": []}, format="json").status_code
            == 403
        )

    def test_role_membership_changes_are_audited(self, staff_client, agent):
        a = role_services.role_create(actor=None, name="a-role")
        b = role_services.role_create(actor=None, name="b-role")
        url = f"/api/v1/agents/{agent.pk}"
        staff_client.patch(url, {"role_ids": [a.pk, b.pk]}, format="json")
        response = staff_client.patch(url, {"role_ids": [b.pk]}, format="json")
        assert response.json()["role_ids"] == [b.pk]
        removed = AuditEvent.objects.get(action="role.member_removed")
        assert removed.before == {
            "role": "a-role",
            "member": "billing-bot",
            "member_type": "registry.agent",
        }
        assert removed.actor_name == "alice-staff"

    def test_roles_api(self, staff_client):
        created = staff_client.post(
            "/api/v1/roles",
            {
                "name": "auditors",
                "description": "Look only",
                "permissions": ["registry.review_all"],
            },
            format="json",
        )
        assert created.status_code == 201, created.json()
        assert created.json()["permissions"] == ["registry.review_all"]
        role_id = created.json()["id"]
        refused = staff_client.patch(
            f"/api/v1/roles/{role_id}", {"permissions": ["registry.execute_tool"]}, format="json"
        )
        assert refused.status_code == 400 and "grant" in refused.json()["error"]["message"]
        unknown = staff_client.patch(
            f"/api/v1/roles/{role_id}", {"permissions": ["registry.fly"]}, format="json"
        )
        assert unknown.status_code == 400
        for label in ("auth.change_user", "auth.add_user", "admin.change_logentry"):
            escalation = staff_client.patch(
                f"/api/v1/roles/{role_id}", {"permissions": [label]}, format="json"
            )
            assert escalation.status_code == 400, label
            assert "not a ToolHub permission" in escalation.json()["error"]["message"]
        assert (
            not Group.objects.get(pk=role_id)
            .permissions.filter(content_type__app_label__in=["auth", "admin"])
            .exists()
        )
        # Rights nothing honours (the audit log and executions are append-only) are refused,
        # and the admin's role form does not offer them.
        for label in ("registry.change_auditevent", "executions.delete_execution"):
            inert = staff_client.patch(
                f"/api/v1/roles/{role_id}", {"permissions": [label]}, format="json"
            )
            assert inert.status_code == 400 and "append-only" in inert.content.decode(), label
        offered = {p.codename for p in role_services.role_permission_choices()}
        assert "change_auditevent" not in offered and "view_auditevent" in offered
        viewer = staff_client.patch(
            f"/api/v1/roles/{role_id}",
            {"permissions": ["registry.review_all", "auth.view_user"]},
            format="json",
        )
        assert viewer.status_code == 200, viewer.content
        assert (
            staff_client.post("/api/v1/roles", {"name": "auditors"}, format="json").status_code
            == 409
        )
        assert staff_client.delete(f"/api/v1/roles/{role_id}").status_code == 204
        # created, updated (the allowed permissions), deleted; refusals change nothing
        assert AuditEvent.objects.filter(target_repr="auditors").count() == 3


class TestGrants:
    @pytest.fixture
    def tool(self, db):
        return tool_services.tool_create(actor=None, name="ledger", type="database")

    def test_grant_check_and_revoke(self, staff_client, tool, agent):
        role = role_services.role_create(actor=None, name="ops")
        agent_services.agent_update(actor=None, agent=agent, data={"role_ids": [role.pk]})
        _, raw = token_services.token_issue(actor=None, user=agent.user)
        agent_client = bearer(raw)
        assert agent_client.get(f"/api/v1/tools/{tool.pk}").status_code == 404

        response = staff_client.post(
            "/api/v1/permissions",
            {"tool_id": str(tool.pk), "role_id": role.pk, "action": "execute"},
            format="json",
        )
        assert response.status_code == 201
        grant = response.json()
        assert grant["granted_by"] == "alice-staff" and grant["tool_name"] == "ledger"
        again = staff_client.post(
            "/api/v1/permissions",
            {"tool_id": str(tool.pk), "role_id": role.pk, "action": "execute"},
            format="json",
        )
        assert again.status_code == 200 and again.json()["id"] == grant["id"]

        assert agent_client.get(f"/api/v1/tools/{tool.pk}").status_code == 200
        check = staff_client.get(
            f"/api/v1/registry/check-permission/{tool.pk}/{role.pk}?required_action=manage"
        ).json()
        assert check["allowed"] is False and check["granted_action"] == "execute"
        check = staff_client.get(
            f"/api/v1/registry/check-permission/{tool.pk}/{role.pk}?required_action=read"
        ).json()
        assert check["allowed"] is True

        assert staff_client.get(f"/api/v1/permissions?tool_id={tool.pk}").json()["count"] == 1
        assert (
            staff_client.get(f"/api/v1/permissions?role_id={role.pk}&action=read").json()["count"]
            == 0
        )
        assert staff_client.get("/api/v1/permissions?action=admin").status_code == 400
        assert staff_client.get("/api/v1/permissions?tool_id=nope").status_code == 400

        assert staff_client.delete(f"/api/v1/permissions/{grant['id']}").status_code == 204
        assert agent_client.get(f"/api/v1/tools/{tool.pk}").status_code == 404
        created = AuditEvent.objects.get(action="grant.created", target_id=grant["id"])
        revoked = AuditEvent.objects.get(action="grant.revoked")
        assert created.actor_name == revoked.actor_name == "alice-staff"
        assert revoked.before["role"] == "ops" and revoked.before["action"] == "execute"

    def test_all_tools_grant_and_bulk(self, staff_client, tool):
        r1 = role_services.role_create(actor=None, name="r1")
        r2 = role_services.role_create(actor=None, name="r2")
        bulk = staff_client.post(
            "/api/v1/permissions/bulk",
            {"role_ids": [r1.pk, r2.pk], "action": "read"},
            format="json",
        )
        assert bulk.status_code == 201 and len(bulk.json()) == 2
        assert all(g["tool_id"] is None for g in bulk.json())
        assert r1.permissions.filter(codename="view_tool").exists()
        later_tool = tool_services.tool_create(actor=None, name="later", type="http")
        by_role = staff_client.get(f"/api/v1/registry/by-role/{r1.pk}").json()
        assert {t["name"] for t in by_role["results"]} == {"ledger", "later"}
        assert later_tool
        by_name = staff_client.get(
            "/api/v1/registry/by-role-name/r1?permission_action=execute"
        ).json()
        assert by_name["count"] == 0
        bad = staff_client.post(
            "/api/v1/permissions/bulk", {"role_ids": [], "action": "read"}, format="json"
        )
        assert bad.status_code == 400

    @pytest.mark.parametrize(
        ("path", "body"),
        [
            ("/api/v1/permissions", {"role_id": 0, "action": "read"}),
            ("/api/v1/permissions/bulk", {"role_ids": [0], "action": "read"}),
            ("/api/v1/rate-limits", {"max_requests": 5, "time_window_seconds": 60}),
        ],
    )
    def test_an_explicit_null_tool_id_is_refused_not_read_as_all_tools(
        self, staff_client, path, body
    ):
        """A client whose tool lookup came back empty must not grant or limit every tool."""
        role = role_services.role_create(actor=None, name="nulls")
        body = {**body, "tool_id": None}
        body = {
            k: ([role.pk] if k == "role_ids" else role.pk if k == "role_id" else v)
            for k, v in body.items()
        }
        response = staff_client.post(path, body, format="json")
        assert response.status_code == 400, response.content
        [detail] = response.json()["error"]["details"]
        assert detail["field"] == "tool_id" and "omit tool_id" in detail["message"]
        assert not role.permissions.exists()

    def test_grant_errors(self, staff_client, tool):
        role = role_services.role_create(actor=None, name="x")
        cases = [
            ({"tool_id": str(tool.pk), "role_id": role.pk, "action": "own"}, 400),
            ({"tool_id": str(tool.pk), "role_id": 987654, "action": "read"}, 404),
            (
                {
                    "tool_id": "00000000-0000-0000-0000-000000000000",
                    "role_id": role.pk,
                    "action": "read",
                },
                404,
            ),
            ({"role_id": role.pk}, 400),
        ]
        for body, status in cases:
            assert (
                staff_client.post("/api/v1/permissions", body, format="json").status_code == status
            ), body

    def test_hard_delete_takes_grants_along_and_records_them(self, staff_client, tool):
        role = role_services.role_create(actor=None, name="x")
        grant_services.grant_create(actor=None, role=role, action="read", tool=tool)
        assert staff_client.delete(f"/api/v1/tools/{tool.pk}?hard_delete=true").status_code == 204
        assert not ToolGrant.objects.filter(role=role).exists()
        event = AuditEvent.objects.get(action="tool.deleted")
        assert event.before["grants"] == [{"role": "x", "action": "read"}]


def test_create_agent_command_prints_token_last(owner):
    role_services.role_create(actor=None, name="fintech-analyst")
    out = io.StringIO()
    call_command(
        "create_agent",
        "cli-bot",
        "--owner",
        "owner-olga",
        "--role",
        "fintech-analyst",
        "--expires-days",
        "7",
        stdout=out,
    )
    lines = out.getvalue().strip().splitlines()
    raw = lines[-1]
    assert raw.startswith("th_")
    assert all(raw not in line for line in lines[:-1])
    agent = Agent.objects.get(name="cli-bot")
    assert list(agent.user.groups.values_list("name", flat=True)) == ["fintech-analyst"]
    token = ApiToken.objects.get(user=agent.user)
    assert timedelta(days=6) < token.expires_at - timezone.now() <= timedelta(days=7)
    assert bearer(raw).get("/api/v1/registry/me").status_code == 200


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["x", "--owner", "ghost"], "No user named"),
        (["x", "--owner", "owner-olga", "--role", "ghost"], "No role named"),
        (["x", "--owner", "owner-olga", "--expires-days", "0"], "at least 1"),
        (["bad name", "--owner", "owner-olga"], "name"),
    ],
)
def test_create_agent_command_errors(owner, args, message):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match=message):
        call_command("create_agent", *args, stdout=io.StringIO())


WEBHOOK_SECRET = "whsec-" + "k" * 24


def test_agent_webhook_is_set_through_the_api_and_its_secret_never_shown(staff_client, owner):
    response = staff_client.post(
        "/api/v1/agents",
        {
            "name": "hooked",
            "owner": owner.username,
            "webhook_url": "https://hooks.example/toolhub",
            "webhook_secret": WEBHOOK_SECRET,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["webhook_url"] == "https://hooks.example/toolhub"
    assert body["has_webhook_secret"] is True and "webhook_secret" not in body
    agent = Agent.objects.get(name="hooked")
    assert WEBHOOK_SECRET not in agent.webhook_secret  # encrypted
    url = f"/api/v1/agents/{agent.pk}"
    assert WEBHOOK_SECRET not in staff_client.get(url).content.decode()

    # A new secret is recorded as changed, never by value; null removes webhook and secret.
    rotated = "another-secret-" + "z" * 10
    patched = staff_client.patch(url, {"webhook_secret": rotated}, format="json")
    assert patched.status_code == 200, patched.content
    event = AuditEvent.objects.filter(action="agent.updated").latest("id")
    assert event.after["webhook_secret_changed"] is True
    audit = str(list(AuditEvent.objects.values("before", "after")))
    assert WEBHOOK_SECRET not in audit and rotated not in audit
    cleared = staff_client.patch(url, {"webhook_url": "", "webhook_secret": None}, format="json")
    assert cleared.status_code == 200
    assert cleared.json()["webhook_url"] == "" and cleared.json()["has_webhook_secret"] is False


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"webhook_url": "https://hooks.example/x"}, "webhook_secret"),  # unsigned: refused
        ({"webhook_url": "https://hooks.example/x", "webhook_secret": "short"}, "webhook_secret"),
        ({"webhook_url": "ftp://hooks.example/x", "webhook_secret": WEBHOOK_SECRET}, "webhook_url"),
        ({"webhook_url": "not a url", "webhook_secret": WEBHOOK_SECRET}, "webhook_url"),
        ({"webhook_secret": 12345678901234567}, "webhook_secret"),
        # Credentials in the URL would be stored, shown and audited in plain.
        (
            {"webhook_url": "https://user:pw@hooks.example/x", "webhook_secret": WEBHOOK_SECRET},
            "webhook_url",
        ),
        ({"webhook_url": "https://hooks.example/x", "webhook_secret": "s" * 513}, "webhook_secret"),
    ],
)
def test_bad_webhooks_are_refused_naming_the_field(staff_client, owner, changes, field):
    response = staff_client.post(
        "/api/v1/agents", {"name": "bad-hook", "owner": owner.username, **changes}, format="json"
    )
    assert response.status_code == 400, response.content
    assert field in [d["field"] for d in response.json()["error"]["details"]]
    assert not Agent.objects.filter(name="bad-hook").exists()


def test_agent_webhook_in_the_admin(superuser, owner):
    from django.test import Client
    from django.urls import reverse

    client = Client()
    client.force_login(superuser)
    form = {
        "name": "admin-hooked",
        "owner": str(owner.pk),
        "description": "",
        "is_active": "on",
        "webhook_url": "https://hooks.example/admin",
        "webhook_secret": "",
    }
    refused = client.post(reverse("admin:registry_agent_add"), form)
    assert refused.status_code == 200 and b"signing secret" in refused.content
    for url in ("hooks.example/admin", "https://u:p@hooks.example/admin"):
        bad = {**form, "webhook_url": url, "webhook_secret": WEBHOOK_SECRET}
        response = client.post(reverse("admin:registry_agent_add"), bad)
        assert response.status_code == 200, url  # the form again, with the error
        assert not Agent.objects.filter(name="admin-hooked").exists()
    response = client.post(
        reverse("admin:registry_agent_add"), {**form, "webhook_secret": WEBHOOK_SECRET}
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    agent = Agent.objects.get(name="admin-hooked")
    assert agent.webhook_url == "https://hooks.example/admin" and agent.webhook_secret
    page = client.get(reverse("admin:registry_agent_change", args=[agent.pk])).content.decode()
    assert WEBHOOK_SECRET not in page and agent.webhook_secret not in page
    # Saving with the secret field empty keeps it.
    kept = client.post(
        reverse("admin:registry_agent_change", args=[agent.pk]), {**form, "description": "x"}
    )
    assert kept.status_code == 302
    agent.refresh_from_db()
    assert agent.description == "x" and agent.webhook_secret


def test_a_webhook_stored_under_older_rules_never_blocks_deactivation(staff_client, owner):
    agent = agent_services.agent_create(actor=None, name="old-hook", owner=owner)
    Agent.objects.filter(pk=agent.pk).update(webhook_url="https://u:p@hooks.example/legacy")
    response = staff_client.patch(f"/api/v1/agents/{agent.pk}", {"is_active": False}, format="json")
    assert response.status_code == 200, response.content
    assert Agent.objects.get(pk=agent.pk).is_active is False
    # Touching the webhook itself is checked under today's rules.
    touched = staff_client.patch(
        f"/api/v1/agents/{agent.pk}", {"webhook_secret": WEBHOOK_SECRET}, format="json"
    )
    assert touched.status_code == 400 and "webhook_url" in touched.content.decode()


def test_a_token_issued_without_an_expiry_gets_the_default_lifetime(settings):
    from tests.factories import make_user

    make_user("lifetime-owner")
    settings.TOOLHUB_TOKEN_DEFAULT_DAYS = 90
    out = io.StringIO()
    call_command("create_agent", "lifetime-bot", "--owner", "lifetime-owner", stdout=out)
    token = ApiToken.objects.get(user__agent__name="lifetime-bot")
    days = (token.expires_at - timezone.now()).total_seconds() / 86400
    assert 89.9 < days <= 90
    assert "expires never" not in out.getvalue()
