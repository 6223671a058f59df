from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command

from registry import demo
from registry.models import AuditEvent, Tool, ToolConfig, ToolParameter

pytestmark = pytest.mark.django_db


def catalog() -> list:
    return [
        (
            t.name,
            t.type,
            t.version,
            t.requires_approval,
            sorted((p.parameter_type, p.name, p.type, p.required) for p in t.parameters.all()),
            sorted((c.config_key, c.is_secret, json.dumps(c.plain_value)) for c in t.configs.all()),
        )
        for t in Tool.objects.order_by("name")
    ]


def test_seeding_twice_gives_the_same_catalog(capsys):
    call_command("seed_demo")
    first, events = catalog(), AuditEvent.objects.count()
    call_command("seed_demo")
    assert catalog() == first
    assert AuditEvent.objects.count() == events  # the second run changed nothing
    assert {t[0] for t in first} == {
        "earnings_call_transcript_fetcher",
        "african_country_directory",
        "bearer_protected_resource_probe",
        "account_balance_lookup",
        "initiate_payment",
        "transaction_insights",
    }
    assert set(Group.objects.values_list("name", flat=True)) >= set(demo.ROLES)
    assert Tool.objects.get(name="initiate_payment").requires_approval is True
    assert ToolParameter.objects.count() > 10


def test_demo_secrets_are_placeholders_and_encrypted():
    call_command("seed_demo")
    secrets = ToolConfig.objects.filter(is_secret=True)
    assert secrets.count() >= 4
    for config in secrets:
        assert config.plain_value is None and config.encrypted_value
        assert config.value == demo.PLACEHOLDER_SECRET


def test_seed_keeps_an_operator_set_secret():
    call_command("seed_demo")
    config = ToolConfig.objects.get(tool__name="initiate_payment", config_key="bearer_token")
    config.set_value("real-credential")
    config.save()
    call_command("seed_demo")
    config.refresh_from_db()
    assert config.value == "real-credential"


def test_ensure_admin_prints_password_once(capsys):
    call_command("ensure_admin", username="boss")
    first = capsys.readouterr().out
    assert "username: boss" in first and "password: " in first
    call_command("ensure_admin", username="boss")
    second = capsys.readouterr().out
    assert "already exists" in second and "password:" not in second


def test_the_demo_lets_an_analyst_run_the_builtin_calculator_offline():
    from registry import authorization

    call_command("sync_python_tools", stdout=io.StringIO())
    call_command("seed_demo", stdout=io.StringIO())
    analyst = Group.objects.get(name="fintech-analyst")
    for name in ("calculator", "unit_convert"):
        tool = Tool.objects.get(name=name)
        assert authorization.role_can(analyst, "execute", tool), name
