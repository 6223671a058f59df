"""Loading the demo catalog idempotently: a second run changes nothing."""

from __future__ import annotations

from django.contrib.auth.models import Group
from django.db import transaction

from registry import demo
from registry.models import RoleProfile, Tool
from registry.services import grants as grant_services
from registry.services import tools as services


@transaction.atomic
def demo_seed(*, actor=None, sandbox_url: str | None = None) -> dict[str, int]:
    """The demo's tools, roles and grants. The standard roles' rights come from
    ``ensure_standard_roles`` (seed_demo runs it first); here they are only named.
    With ``sandbox_url`` the HTTP tools call the demo sandbox instead of public hosts."""
    counts = {"tools_created": 0, "tools_updated": 0, "roles_created": 0}
    for name, description in demo.ROLES.items():
        role, created = Group.objects.get_or_create(name=name)
        RoleProfile.objects.get_or_create(group=role, defaults={"description": description})
        counts["roles_created"] += int(created)
    for spec in demo.tools_for(sandbox_url):
        spec = dict(spec)
        parameters = spec.pop("parameters")
        configs = spec.pop("configs")
        tool = Tool.objects.filter(name=spec["name"]).first()
        if tool is None:
            services.tool_create(actor=actor, parameters=parameters, configs=configs, **spec)
            counts["tools_created"] += 1
            continue
        changed = {k: v for k, v in spec.items() if getattr(tool, k) != v}
        if changed:
            services.tool_update(actor=actor, tool=tool, data=changed)
            counts["tools_updated"] += 1
        _sync_parameters(actor, tool, parameters)
        _sync_configs(actor, tool, configs)
    for role_name, action, tool_name in demo.GRANTS:
        role = Group.objects.get(name=role_name)
        tool = Tool.objects.get(name=tool_name) if tool_name else None
        grant_services.grant_create(actor=actor, role=role, action=action, tool=tool)
    for role_name, action, tool_name in demo.BUILTIN_GRANTS:
        tool = Tool.objects.filter(name=tool_name).first()
        if tool is not None:
            role = Group.objects.get(name=role_name)
            grant_services.grant_create(actor=actor, role=role, action=action, tool=tool)
    return counts


def _sync_parameters(actor, tool: Tool, parameters: list[dict]) -> None:
    existing = {(p.parameter_type, p.name): p for p in tool.parameters.all()}
    for spec in parameters:
        key = (spec.get("parameter_type", "input"), spec["name"])
        param = existing.get(key)
        if param is None:
            services.parameter_create(actor=actor, tool=tool, **spec)
            continue
        wanted = {
            "type": spec.get("type", "string"),
            "required": spec.get("required", False),
            "description": spec.get("description", ""),
            "json_schema": spec.get("json_schema", {}),
            "has_default": "default" in spec,
            "default": spec.get("default"),
        }
        changed = {k: v for k, v in wanted.items() if getattr(param, k) != v}
        if changed:
            services.parameter_update(actor=actor, parameter=param, data=changed)


def _sync_configs(actor, tool: Tool, configs: list[dict]) -> None:
    existing = {c.config_key: c for c in tool.configs.all()}
    for spec in configs:
        config = existing.get(spec["config_key"])
        if config is None:
            services.config_set(actor=actor, tool=tool, **spec)
        elif config.is_secret:
            continue  # an operator may have set the real credential: keep it
        elif config.plain_value != spec["config_value"]:
            services.config_set(actor=actor, tool=tool, **spec)
