"""Reads of the tool catalog (the verification runs: ``registry.integrity``)."""

from __future__ import annotations

from django.db.models import Prefetch, Q, QuerySet

from registry import formats
from registry.models import (
    Guard,
    RateLimitRule,
    Tool,
    ToolConfig,
    ToolParameter,
    Toolset,
)


def rate_limit_rules_for(tool: Tool) -> list[RateLimitRule]:
    """The active rules that apply to ``tool`` (its own and the all-tools ones), tightest window first."""
    return list(
        RateLimitRule.objects.filter(Q(tool=tool) | Q(tool__isnull=True), is_active=True).order_by(
            "time_window_seconds"
        )
    )


def guards_for(tool: Tool) -> list[Guard]:
    """The active guards that apply to ``tool`` (its own and the all-tools ones), in the
    order they run."""
    return list(
        Guard.objects.filter(Q(tool=tool) | Q(tool__isnull=True), is_active=True).order_by(
            "order", "name"
        )
    )


def tool_list(
    *, queryset: QuerySet[Tool] | None = None, filters: dict | None = None
) -> QuerySet[Tool]:
    qs = queryset if queryset is not None else Tool.objects.all()
    filters = filters or {}
    if filters.get("search"):
        term = filters["search"]
        qs = qs.filter(Q(name__icontains=term) | Q(description__icontains=term))
    if filters.get("tool_type"):
        qs = qs.filter(type=filters["tool_type"])
    if filters.get("is_active") is not None:
        qs = qs.filter(is_active=filters["is_active"])
    if filters.get("category"):
        qs = qs.filter(tool_metadata__category=filters["category"])
    return qs.order_by("name")


def tool_names_listed_as(given: str) -> list[str]:
    """The names of the tools a discovery format lists as ``given`` when that is not their
    own name (Gemini's ``_.2fa-lookup`` for ``2fa-lookup``); more than one only if digests
    of long names collide."""
    lookup = formats.renamed_lookup(given)
    if lookup is None:
        return []
    names = Tool.objects.filter(**lookup).values_list("name", flat=True)
    return [n for n in names if any(formats.provider_name(n, f) == given for f in formats.FORMATS)]


def tool_with_details(queryset: QuerySet[Tool]) -> QuerySet[Tool]:
    return queryset.prefetch_related("parameters", "configs")


def parameter_list(*, tool: Tool, parameter_type: str | None = None) -> QuerySet[ToolParameter]:
    qs = tool.parameters.all()
    if parameter_type:
        qs = qs.filter(parameter_type=parameter_type)
    return qs.order_by("parameter_type", "position", "name")


def config_list(*, tool: Tool) -> QuerySet[ToolConfig]:
    return tool.configs.all().order_by("config_key")


def tool_discovery_list(queryset: QuerySet[Tool]) -> QuerySet[Tool]:
    """``queryset`` by name with what a discovery format reads (parameters, the secret map)."""
    return queryset.prefetch_related(
        Prefetch("parameters", queryset=ToolParameter.objects.order_by("position", "name")),
        Prefetch("configs", queryset=ToolConfig.objects.filter(config_key="headers_input_map")),
    ).order_by("name")


def toolset_active(slug: str) -> Toolset | None:
    return Toolset.objects.filter(slug=slug, is_active=True).first()


def toolset_holds(slug: str, tool_id) -> bool:
    """Whether the active toolset ``slug`` holds the tool ``tool_id``."""
    return Tool.objects.filter(pk=tool_id, toolsets__slug=slug, toolsets__is_active=True).exists()


def toolset_tools(queryset: QuerySet[Tool], slug: str) -> QuerySet[Tool]:
    """The tools of ``queryset`` in the active toolset ``slug`` (none when there is no such)."""
    return queryset.filter(toolsets__slug=slug, toolsets__is_active=True)
