"""Secrets at rest: ciphertext only in the database, and key rotation re-encrypts."""

from __future__ import annotations

import io

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.db import connection

from registry import crypto
from registry.models import AuditEvent, ToolConfig
from registry.services.tools import config_set
from tests.factories import ToolFactory

pytestmark = pytest.mark.django_db


def raw_ciphertext(config_id) -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT encrypted_value FROM registry_toolconfig WHERE id = %s",
            [config_id.hex if connection.vendor == "sqlite" else config_id],
        )
        return cursor.fetchone()[0]


def test_rotation_reencrypts_under_the_new_primary_key(settings):
    old_key = settings.TOOLHUB_ENCRYPTION_KEYS[0]
    tool = ToolFactory()
    config, _ = config_set(
        actor=None, tool=tool, config_key="token", config_value="rotate-me-canary", is_secret=True
    )
    before = raw_ciphertext(config.pk)
    assert "rotate-me-canary" not in before
    assert Fernet(old_key).decrypt(before.encode()) == b'"rotate-me-canary"'

    new_key = Fernet.generate_key().decode()
    settings.TOOLHUB_ENCRYPTION_KEYS = [new_key, old_key]
    call_command("rotate_encryption_keys", stdout=io.StringIO())
    after = raw_ciphertext(config.pk)
    assert after != before
    assert Fernet(new_key).decrypt(after.encode()) == b'"rotate-me-canary"'

    # The old key can now be dropped: values still decrypt.
    settings.TOOLHUB_ENCRYPTION_KEYS = [new_key]
    assert ToolConfig.objects.get(pk=config.pk).value == "rotate-me-canary"
    assert AuditEvent.objects.filter(action="secrets.reencrypted").exists()


def test_unknown_key_is_a_clear_error(settings):
    tool = ToolFactory()
    config, _ = config_set(actor=None, tool=tool, config_key="t", config_value="x", is_secret=True)
    settings.TOOLHUB_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    with pytest.raises(crypto.SecretUnreadable):
        ToolConfig.objects.get(pk=config.pk).value  # noqa: B018


def test_non_secret_values_are_not_encrypted():
    tool = ToolFactory()
    config, _ = config_set(actor=None, tool=tool, config_key="base_url", config_value="https://x")
    config.refresh_from_db()
    assert config.plain_value == "https://x" and config.encrypted_value == ""


def test_rotation_covers_every_stored_secret(settings, django_user_model):
    from executions.models import Execution
    from registry.models import Agent, MCPServer

    old_key = settings.TOOLHUB_ENCRYPTION_KEYS[0]
    tool = ToolFactory()
    server = MCPServer(name="rot", transport="http", url="https://mcp.example/mcp")
    server.set_auth_token("mcp-token-canary")
    server.set_env({"VENDOR_TOKEN": "env-canary"})
    server.save()
    owner = django_user_model.objects.create(username="rot-owner")
    agent_user = django_user_model.objects.create(username="agent.rot")
    agent = Agent.objects.create(
        name="rot", user=agent_user, owner=owner, webhook_secret=crypto.encrypt_json("hook")
    )
    pending = Execution.objects.create(
        tool=tool,
        tool_name=tool.name,
        tool_type="http",
        principal=agent_user,
        status="pending_approval",
        sealed_secrets=crypto.encrypt_json({"token": "per-call"}),
    )

    new_key = Fernet.generate_key().decode()
    settings.TOOLHUB_ENCRYPTION_KEYS = [new_key, old_key]
    call_command("rotate_encryption_keys", stdout=io.StringIO())
    settings.TOOLHUB_ENCRYPTION_KEYS = [new_key]  # the old key is gone

    assert MCPServer.objects.get(pk=server.pk).stored_auth_token() == "mcp-token-canary"
    assert MCPServer.objects.get(pk=server.pk).stored_env() == {"VENDOR_TOKEN": "env-canary"}
    assert crypto.decrypt_json(Agent.objects.get(pk=agent.pk).webhook_secret) == "hook"
    sealed = Execution.objects.get(pk=pending.pk).sealed_secrets
    assert crypto.decrypt_json(sealed) == {"token": "per-call"}
    event = AuditEvent.objects.get(action="secrets.reencrypted")
    assert event.after["MCP server tokens"] == 1 and event.after["sealed call secrets"] == 1
