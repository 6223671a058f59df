"""The governance a run starts from, made through the project's services, and its catalog."""

from __future__ import annotations

import json
import random

from compliance.rows import N

ROLES = {
    "customer-support": ["crm", "billing", "tickets"],
    "analyst": ["warehouse", "reports", "billing"],
    "sre": ["infra", "monitoring", "tickets"],
    "finance-ops": ["billing", "payments", "reports"],
    "data-science": ["warehouse", "ml", "search"],
}
CATEGORIES = [
    "crm",
    "billing",
    "tickets",
    "warehouse",
    "reports",
    "infra",
    "monitoring",
    "payments",
    "ml",
    "search",
]
VERBS = [
    "lookup",
    "search",
    "list",
    "get",
    "create",
    "update",
    "summarize",
    "export",
    "refund",
    "restart",
]
N_TOOLS = 200
N_AGENTS = 50


def seed(rng: random.Random) -> dict:
    """People, roles, tools, grants and agents (their governance events are real and sealed)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission

    from registry.models import Tool
    from registry.services.roles import role_create
    from registry.services.tokens import token_issue

    User = get_user_model()
    admin = User.objects.create_superuser("bench-admin", "bench-admin@example.com", None)
    reviewer = User.objects.create_user(
        "bench-reviewer", "reviewer@example.com", None, is_staff=True
    )
    reviewer.user_permissions.add(Permission.objects.get(codename="review_all"))
    owners = [
        User.objects.create_user(f"owner-{i}", f"owner{i}@example.com", None, is_staff=True)
        for i in range(1, 7)
    ]
    for i in range(1, 4):  # they decide the approval-gated calls of the generator
        User.objects.create_user(f"approver-{i}", f"appr{i}@example.com", None, is_staff=True)
    roles = {
        name: role_create(actor=admin, name=name, description=f"{name} agents") for name in ROLES
    }
    tools = _tools(rng, admin)
    _grants(admin, roles, tools)
    _agents(admin, roles, owners)
    _token, raw = token_issue(actor=admin, user=reviewer, name="compliance-bench")
    # One deactivated tool, so refusals of kind tool_inactive have a target.
    Tool.objects.filter(pk=tools[-1].pk).update(is_active=False)
    return {"reviewer_token": raw}


def _tools(rng: random.Random, admin) -> list:
    from registry.services.tools import tool_create

    types = ["http"] * 10 + ["database"] * 4 + ["mcp"] * 4 + ["python"] * 2
    tools = []
    for i in range(N_TOOLS):
        category = CATEGORIES[i % len(CATEGORIES)]
        kind = types[rng.randrange(len(types))]
        verb = VERBS[rng.randrange(len(VERBS))]
        name = f"{category}__{verb}_{i:03d}" if kind == "mcp" else f"{category}_{verb}_{i:03d}"
        risky = (verb in ("refund", "restart") and rng.random() < 0.3) or rng.random() < 0.01
        tool = tool_create(
            actor=admin,
            name=name,
            type=kind,
            description=f"{verb} in {category}",
            version=f"1.{rng.randrange(5)}.{rng.randrange(10)}",
            tool_metadata={
                "category": category,
                "risk": "high" if risky else "low",
                **({"cost_per_call": "0.002"} if rng.random() < 0.3 else {}),
            },
            requires_approval=risky,
            cache_ttl_seconds=300 if verb in ("lookup", "get") else 0,
        )
        tools.append(tool)
    return tools


def _grants(admin, roles: dict, tools: list) -> None:
    """Each role may execute every tool of its categories."""
    from registry.services.grants import grant_create

    by_category: dict[str, list] = {}
    for tool in tools:
        by_category.setdefault(tool.tool_metadata["category"], []).append(tool)
    for role_name, categories in ROLES.items():
        for category in categories:
            for tool in by_category.get(category, []):
                grant_create(actor=admin, role=roles[role_name], action="execute", tool=tool)


def _agents(admin, roles: dict, owners: list) -> None:
    """N_AGENTS agents in the roles in turn (every seventh in a second one); three owners in one."""
    from registry.services.agents import agent_create

    role_names = list(ROLES)
    for i in range(N_AGENTS):
        role_name = role_names[i % len(role_names)]
        extra = [roles[role_names[(i + 2) % len(role_names)]].pk] if i % 7 == 0 else []
        agent_create(
            actor=admin,
            name=f"{role_name}-bot-{i:02d}",
            owner=owners[i % len(owners)],
            role_ids=[roles[role_name].pk, *extra],
        )
    for owner in owners[:3]:
        owner.groups.add(roles[role_names[owners.index(owner)]])


def load_catalog(rng) -> dict:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from registry.models import Agent, Tool
    from registry.models.grants import ToolGrant

    User = get_user_model()
    tools_all = {}
    for t in Tool.objects.all():
        tools_all[t.pk] = {
            "id": str(t.pk),
            "name": t.name,
            "version": t.version,
            "type": t.type,
            "approval": t.requires_approval,
            "cached": t.cache_ttl_seconds > 0,
            "active": t.is_active,
            "cost": (t.tool_metadata or {}).get("cost_per_call") or N,
        }
    grants: dict[int, list] = {}
    for g in ToolGrant.objects.filter(tool__isnull=False, tool__is_active=True):
        grants.setdefault(g.role_id, []).append(tools_all[g.tool_id])
    role_ids = {g.name: g.pk for g in Group.objects.all()}

    def principal(user, **extra):
        roles = sorted(user.groups.values_list("name", flat=True))
        pool = []
        for name in roles:
            pool.extend(grants.get(role_ids[name], []))
        pool = sorted({t["id"]: t for t in pool}.values(), key=lambda t: t["name"])
        rng.shuffle(pool)  # which tools are hot differs per caller
        return {
            "user_id": user.pk,
            "username": user.username,
            "roles": roles,
            "roles_json": json.dumps(roles),
            "tools": pool,
            **extra,
        }

    agents = [
        principal(a.user, id=str(a.pk), ip=f"10.20.{i // 250}.{i % 250 + 1}")
        for i, a in enumerate(Agent.objects.select_related("user").order_by("name"))
    ]
    humans = [principal(u) for u in User.objects.filter(username__startswith="owner-")]
    approvers = [
        {"user_id": u.pk, "username": u.username}
        for u in User.objects.filter(username__startswith="approver-")
    ]
    inactive = next(t for t in tools_all.values() if not t["active"])
    return {
        "tools": [t for t in tools_all.values() if t["active"]],
        "agents": agents,
        "humans": humans,
        "approvers": approvers,
        "role_ids": role_ids,
        "inactive": inactive,
    }
