"""Writes to agents: their user, their webhook and their roles."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from django.contrib.auth import get_user_model
from django.db import transaction

from registry import crypto
from registry.models import Agent
from registry.policy import policy_check
from registry.services.audit import audit_record
from registry.services.role_memberships import _roles, _set_membership
from registry.services.validation import full_clean, raise_invalid
from toolhub.exceptions import Conflict

# Agents

# An agent acts as a user of its own, named after it with this prefix.
AGENT_USERNAME_PREFIX = "agent."


def agent_snapshot(agent: Agent) -> dict:
    return {
        "id": str(agent.pk),
        "name": agent.name,
        "owner": agent.owner.username,
        "description": agent.description,
        "is_active": agent.is_active,
        "webhook_url": agent.webhook_url,
        "has_webhook_secret": bool(agent.webhook_secret),
        "roles": sorted(agent.user.groups.values_list("name", flat=True)),
    }


WEBHOOK_SECRET_MIN_CHARS = 16
WEBHOOK_SECRET_MAX_CHARS = 512


def webhook_problems(url: str, *, secret: str | None, has_secret: bool) -> dict[str, str]:
    """What is wrong with an agent's webhook (field → message); ``secret``: a new one, if given.

    A webhook must be an http(s) URL and have a signing secret, so the
    receiver can tell ToolHub's POSTs from anyone else's.
    """
    problems: dict[str, str] = {}
    if secret and len(secret) < WEBHOOK_SECRET_MIN_CHARS:
        problems["webhook_secret"] = (
            f"Use at least {WEBHOOK_SECRET_MIN_CHARS} characters (a random string)."
        )
    elif secret and len(secret) > WEBHOOK_SECRET_MAX_CHARS:
        problems["webhook_secret"] = f"Use at most {WEBHOOK_SECRET_MAX_CHARS} characters."
    if url:
        try:
            parts = urlsplit(url)
            host, credentials = parts.hostname, parts.username or parts.password
        except ValueError:
            parts, host, credentials = None, None, None
        if parts is None or parts.scheme.lower() not in ("http", "https") or not host:
            problems["webhook_url"] = "Give an absolute http:// or https:// URL."
        elif credentials:
            # They would be stored, shown and audited in plain: the signature authenticates.
            problems["webhook_url"] = (
                "Do not put credentials in the URL; receivers check X-ToolHub-Signature."
            )
        elif not secret and not has_secret and "webhook_secret" not in problems:
            missing = (
                "A webhook needs a signing secret: receivers check X-ToolHub-Signature with it."
            )
            problems["webhook_secret"] = missing
    return problems


def _apply_webhook(agent: Agent, data: dict) -> bool:
    """Set ``webhook_url`` / ``webhook_secret`` from ``data``; True when the secret changed.

    An empty or null ``webhook_secret`` removes the stored secret; absent keeps it.
    Without either key nothing is checked: a webhook stored under older rules never
    blocks another change (deactivating the agent, above all).
    """
    if "webhook_url" not in data and "webhook_secret" not in data:
        return False
    if "webhook_url" in data:
        agent.webhook_url = data["webhook_url"] or ""
    secret = data.get("webhook_secret")
    if secret is not None and not isinstance(secret, str):
        raise_invalid(
            [{"field": "webhook_secret", "message": "Must be a string.", "code": "invalid"}]
        )
    clearing = "webhook_secret" in data and not secret
    problems = webhook_problems(
        agent.webhook_url, secret=secret, has_secret=bool(agent.webhook_secret) and not clearing
    )
    if problems:
        raise_invalid([{"field": f, "message": m, "code": "invalid"} for f, m in problems.items()])
    if clearing:
        changed = bool(agent.webhook_secret)
        agent.webhook_secret = ""
        return changed
    if secret:
        changed = not agent.webhook_secret or crypto.decrypt_json(agent.webhook_secret) != secret
        if changed:
            agent.webhook_secret = crypto.encrypt_json(secret)
        return changed
    return False


@transaction.atomic
def agent_create(
    *,
    actor,
    name: str,
    owner,
    description: str = "",
    role_ids: Iterable = (),
    is_active: bool = True,
    webhook_url: str = "",
    webhook_secret: str | None = None,
) -> Agent:
    """Create an agent and its user. ``webhook_secret`` is stored encrypted and never shown."""
    policy_check(actor=actor, action="agent.write")
    User = get_user_model()
    roles = _roles(role_ids)
    agent = Agent(name=name, owner=owner, description=description, is_active=is_active)
    _apply_webhook(agent, {"webhook_url": webhook_url, "webhook_secret": webhook_secret})
    full_clean(agent, exclude=["user", "owner"])
    username = f"{AGENT_USERNAME_PREFIX}{name}"[:150]
    if Agent.objects.filter(name=name).exists() or User.objects.filter(username=username).exists():
        raise Conflict(
            f"An agent named '{name}' already exists.",
            code="duplicate_name",
            details=[{"field": "name", "message": "Already in use.", "code": "unique"}],
        )
    user = User(username=username, is_staff=False, is_superuser=False, is_active=True)
    user.set_unusable_password()
    user.save()
    agent.user = user
    agent.save()
    audit_record(actor=actor, action="agent.created", target=agent, after=agent_snapshot(agent))
    _set_membership(actor, user, roles, target=agent)
    return agent


@transaction.atomic
def agent_update(*, actor, agent: Agent, data: dict) -> Agent:
    """Change an agent's description, owner, webhook, roles or whether it is active."""
    policy_check(actor=actor, action="agent.write")
    agent = Agent.objects.select_for_update().select_related("user", "owner").get(pk=agent.pk)
    before = agent_snapshot(agent)
    for field in ("description", "is_active", "owner"):
        if field in data:
            setattr(agent, field, data[field])
    secret_changed = _apply_webhook(agent, data)
    full_clean(agent, exclude=["user", "owner", "name"])
    agent.save()
    if "role_ids" in data:
        _set_membership(actor, agent.user, _roles(data["role_ids"]), target=agent)
    after = agent_snapshot(agent)
    if secret_changed or {k: v for k, v in after.items() if k != "roles"} != {
        k: v for k, v in before.items() if k != "roles"
    }:
        action = "agent.updated"
        if set(data) == {"is_active"}:
            action = "agent.activated" if agent.is_active else "agent.deactivated"
        if secret_changed:
            after["webhook_secret_changed"] = True  # the secret itself is never recorded
        audit_record(actor=actor, action=action, target=agent, before=before, after=after)
    return agent
