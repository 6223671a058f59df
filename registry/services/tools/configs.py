"""Writes to a tool's config values, and re-encrypting stored secrets."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from registry.hooks import encrypted_fields
from registry.models import MCPServer, Tool, ToolConfig
from registry.services.audit import audit_record
from registry.services.tools.config_checks import _check_cacheable, _check_config
from registry.services.tools.definition import _definition_changed
from registry.services.tools.field_checks import _check_finite
from registry.services.tools.mcp_managed import (
    _linked_server_name,
    check_config_change,
    fallback_remote_tool_name,
)
from registry.services.tools.saving import _save
from registry.services.tools.snapshots import config_snapshot
from registry.services.validation import full_clean, raise_invalid


def _store_remote_tool_name(actor, tool: Tool) -> None:
    """Fix which remote tool a linked ``mcp`` tool calls, when the link is made without
    saying: what its name says now, stored as ``remote_tool_name`` (which only
    platform admins change), so that renaming the tool later changes nothing."""
    if tool.type != "mcp" or tool.configs.filter(config_key="remote_tool_name").exists():
        return
    server_name = _linked_server_name(tool)
    if server_name is None:
        return
    remote = fallback_remote_tool_name(tool.name, server_name)
    config_set(actor=actor, tool=tool, config_key="remote_tool_name", config_value=remote)


# Configs


@transaction.atomic
def config_set(
    *,
    actor,
    tool: Tool,
    config_key: str,
    config_value: Any,
    is_secret: bool | None = None,
    _prefix: str = "",
    _creating: bool = False,
) -> tuple[ToolConfig, bool]:
    """Create or replace the config ``config_key`` of ``tool``. Returns ``(config, created)``.

    When an existing key is updated without ``is_secret``, it keeps its
    secrecy: a secret is never turned into a plain value by accident. The value
    must suit the tool's executor (``config_problem``); it is checked before a
    secret is encrypted, and a refused secret is never quoted.
    """
    _check_finite({"config_value": config_value}, _prefix)
    check_config_change(actor, tool, config_key, creating=_creating)
    config = ToolConfig.objects.select_for_update().filter(tool=tool, config_key=config_key).first()
    created = config is None
    if created:
        config = ToolConfig(tool=tool, config_key=config_key, is_secret=bool(is_secret))
        before = None
    else:
        before = config_snapshot(config)
        if config.is_secret and is_secret is not None and not is_secret:
            # Turning a secret plain would show its value (kept, in the admin) or
            # a successor credential to everyone who reads the tool.
            raise_invalid(
                [
                    {
                        "field": f"{_prefix}.is_secret" if _prefix else "is_secret",
                        "message": (
                            f"Config '{config_key}' is secret and stays secret: to make it "
                            "a plain value, delete it and add it again."
                        ),
                        "code": "secret_stays_secret",
                    }
                ]
            )
        if is_secret is not None:
            config.is_secret = bool(is_secret)
    _check_config(
        tool,
        config_key,
        config_value,
        secret=config.is_secret,
        field=f"{_prefix}.config_value" if _prefix else "config_value",
    )
    config.set_value(config_value)
    full_clean(config, exclude=["tool"], prefix=_prefix)
    _save(config, f"Duplicate config key '{config_key}'.", "config_key", _prefix)
    if not _creating:  # tool_create: the row is new, its cacheability checked once at the end
        _definition_changed(tool.pk)
        _check_cacheable(tool)
    after = config_snapshot(config)
    action = "tool_config.created" if created else "tool_config.updated"
    audit_record(actor=actor, action=action, target=config, before=before, after=after)
    if config_key in ("server", "server_id") and not _creating:
        _store_remote_tool_name(actor, tool)
    return config, created


@transaction.atomic
def config_delete(*, actor, config: ToolConfig) -> None:
    check_config_change(actor, config.tool, config.config_key)
    snapshot = config_snapshot(config)
    target_repr, target_id = str(config), str(config.pk)
    config.delete()
    _definition_changed(config.tool_id)
    audit_record(
        actor=actor,
        action="tool_config.deleted",
        target_type=ToolConfig._meta.label_lower,
        target_id=target_id,
        target_repr=target_repr,
        before=snapshot,
    )


@transaction.atomic
def secrets_reencrypt() -> int:
    """Re-encrypt every stored secret under the primary key (after a key rotation).

    Secret configs, MCP servers' bearer tokens and stdio environments, agents'
    webhook secrets, upstream providers' client secrets and people's upstream tokens,
    and the sealed per-call secrets of calls not yet run (a call waiting for approval
    must still run once the old key is gone).
    """
    from registry import crypto
    from registry.models import Agent, UpstreamConnection, UpstreamProvider

    places = [
        ("secret configs", ToolConfig.objects.filter(is_secret=True), "encrypted_value"),
        ("MCP server tokens", MCPServer.objects.all(), "encrypted_auth_token"),
        ("MCP server environments", MCPServer.objects.all(), "encrypted_env"),
        ("agent webhook secrets", Agent.objects.all(), "webhook_secret"),
        (
            "upstream client secrets",
            UpstreamProvider.objects.all(),
            "encrypted_client_secret",
        ),
        ("upstream access tokens", UpstreamConnection.objects.all(), "encrypted_access_token"),
        ("upstream refresh tokens", UpstreamConnection.objects.all(), "encrypted_refresh_token"),
    ]
    # Columns of other apps (executions' sealed per-call secrets), registered at start-up.
    places += [(f.label, f.queryset(), f.field) for f in encrypted_fields()]
    counts: dict[str, int] = {}
    for label, queryset, field in places:
        counts[label] = 0
        rows = queryset.exclude(**{field: ""}).select_for_update().values_list("pk", field)
        for pk, token in rows:
            rotated = crypto.rotate(token)
            queryset.model.objects.filter(pk=pk, **{field: token}).update(**{field: rotated})
            counts[label] += 1
    count = sum(counts.values())
    audit_record(
        actor=None,
        action="secrets.reencrypted",
        target_type="registry.toolconfig",
        target_repr=", ".join(f"{n} {label}" for label, n in counts.items()),
        after={"count": count, **counts},
    )
    return count
