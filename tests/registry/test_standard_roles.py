"""``manage.py ensure_roles``: the standard roles a production install needs, created or completed."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.core.management.base import CommandError

from registry import authorization
from registry.models import Action, Agent, AuditEvent, Tool, ToolGrant
from registry.services import roles as role_services
from tests.factories import ToolFactory, make_user

pytestmark = pytest.mark.django_db


def ensure_roles() -> str:
    out = io.StringIO()
    call_command("ensure_roles", stdout=out)
    return out.getvalue()


def labels(role: Group) -> set[str]:
    return {
        f"{p.content_type.app_label}.{p.codename}"
        for p in role.permissions.select_related("content_type")
    }


def member(role_name: str, username: str):
    user = make_user(username, is_staff=True)
    user.groups.add(Group.objects.get(name=role_name))
    return get_user_model().objects.get(pk=user.pk)  # no cached permissions


def test_creates_both_roles_with_their_rights():
    before = ToolFactory(name="existing_tool")
    output = ensure_roles()
    after = ToolFactory(name="later_tool")  # all-tools grants cover tools added later too

    assert "platform-admin: created" in output and "reviewer: created" in output
    admin_role, reviewer_role = (Group.objects.get(name=n) for n in ("platform-admin", "reviewer"))
    assert labels(admin_role) >= set(role_services.PLATFORM_ADMIN_PERMISSIONS)
    assert labels(reviewer_role) >= set(role_services.REVIEWER_PERMISSIONS)
    assert set(ToolGrant.objects.values_list("role__name", "action", "tool")) == {
        ("platform-admin", "manage", None),
        ("reviewer", "read", None),
    }

    admin_user, reviewer = member("platform-admin", "ada"), member("reviewer", "rita")
    assert authorization.is_platform_admin(admin_user) and not authorization.is_reviewer(admin_user)
    assert authorization.is_reviewer(reviewer) and not authorization.is_platform_admin(reviewer)
    for tool in (before, after):
        assert authorization.can(admin_user, Action.MANAGE, tool)
        assert authorization.can(reviewer, Action.READ, tool)
        assert not authorization.can(reviewer, Action.EXECUTE, tool)
        assert not authorization.can(reviewer, Action.MANAGE, tool)
    assert authorization.restrict(Tool.objects.all(), reviewer).count() == Tool.objects.count() == 2
    assert not authorization.restrict(Tool.objects.all(), reviewer, Action.EXECUTE).exists()

    # Everything went through the audited services.
    audited = set(AuditEvent.objects.values_list("action", "target_repr"))
    assert {("role.created", "platform-admin"), ("role.created", "reviewer")} <= audited
    assert AuditEvent.objects.filter(action="grant.created").count() == 2


def test_second_run_changes_nothing_and_writes_no_audit_event():
    ensure_roles()
    events = AuditEvent.objects.count()
    rights = {r.name: labels(r) for r in Group.objects.all()}
    assert events > 0

    output = ensure_roles()

    assert AuditEvent.objects.count() == events
    assert {r.name: labels(r) for r in Group.objects.all()} == rights
    assert ToolGrant.objects.count() == 2
    assert "platform-admin: unchanged" in output and "reviewer: unchanged" in output


def test_existing_role_gets_back_a_missing_permission_and_keeps_extras():
    ensure_roles()
    reviewer_role = Group.objects.get(name="reviewer")
    reviewer_role.permissions.remove(
        Permission.objects.get(content_type__app_label="registry", codename="review_all")
    )
    extra = Permission.objects.get(
        content_type__app_label="registry", codename="view_ratelimitrule"
    )
    admin_role = Group.objects.get(name="platform-admin")
    admin_role.permissions.add(extra)  # an admin's own addition
    last_event = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first()
    assert not authorization.is_reviewer(member("reviewer", "rita"))

    output = ensure_roles()

    assert "reviewer: added 1 permission(s): registry.review_all" in output
    assert "platform-admin: unchanged" in output
    assert "registry.review_all" in labels(reviewer_role)
    assert "registry.view_ratelimitrule" in labels(admin_role)  # not removed
    assert authorization.is_reviewer(get_user_model().objects.get(username="rita"))
    new_events = AuditEvent.objects.filter(id__gt=last_event)
    assert [(e.action, e.target_repr) for e in new_events] == [("role.updated", "reviewer")]


def test_role_made_by_hand_is_completed():
    """A 'platform-admin' an operator made without rights gets its permissions and grant."""
    role = role_services.role_create(actor=None, name="platform-admin", description="ours")
    person = make_user("ada")
    person.groups.add(role)
    assert not authorization.is_platform_admin(person)

    output = ensure_roles()

    assert "platform-admin: added the all-tools manage grant; added" in output
    assert Group.objects.filter(name="platform-admin").count() == 1
    assert role.profile.description == "ours"  # left as the operator wrote it
    assert authorization.is_platform_admin(get_user_model().objects.get(pk=person.pk))
    assert ToolGrant.objects.filter(role=role, action="manage", tool=None).exists()


def test_create_agent_with_platform_admin_works_afterwards():
    call_command("ensure_admin", username="admin", stdout=io.StringIO())
    with pytest.raises(CommandError, match="No role named 'platform-admin'"):
        call_command("create_agent", "ops", owner="admin", role=["platform-admin"])

    ensure_roles()
    out = io.StringIO()
    call_command("create_agent", "ops", owner="admin", role=["platform-admin"], stdout=out)

    agent = Agent.objects.get(name="ops")
    assert "with platform-admin" in out.getvalue()
    assert authorization.is_platform_admin(get_user_model().objects.get(pk=agent.user_id))


def test_failure_is_a_clear_command_error_and_changes_nothing():
    Permission.objects.filter(content_type__app_label="registry", codename="review_all").delete()
    with pytest.raises(CommandError, match=r"registry\.review_all.*migrate"):
        ensure_roles()
    assert not Group.objects.filter(name__in=["platform-admin", "reviewer"]).exists()
    assert not AuditEvent.objects.exists()


def test_seed_demo_makes_the_standard_roles_through_the_same_code():
    call_command("seed_demo", stdout=io.StringIO())
    # Created through role_create (audited), not quietly as before.
    assert AuditEvent.objects.filter(action="role.created", target_repr="platform-admin").exists()
    assert AuditEvent.objects.filter(action="role.created", target_repr="reviewer").exists()
    assert "platform-admin: unchanged" in ensure_roles()


def test_missing_only_creates_what_is_missing_and_leaves_existing_roles_alone():
    from django.contrib.auth.models import Group
    from django.core.management import call_command

    from registry.models import AuditEvent

    call_command("ensure_roles", stdout=io.StringIO())
    reviewer = Group.objects.get(name="reviewer")
    reviewer.permissions.clear()  # taken away on purpose
    Group.objects.get(name="platform-admin").delete()
    before = AuditEvent.objects.count()
    call_command("ensure_roles", "--missing-only", stdout=io.StringIO())
    assert Group.objects.filter(name="platform-admin").exists()  # created again
    assert not Group.objects.get(name="reviewer").permissions.exists()  # left alone
    assert AuditEvent.objects.count() > before
