"""Toolsets: named subsets of tools, each served as its own MCP server at ``/mcp/<slug>``."""

from __future__ import annotations

import uuid

from django.db import models

from registry.models.tools import Tool


class Toolset(models.Model):
    """A curated list of tools (a virtual MCP server), e.g. ``support`` at ``/mcp/support``.

    It grants nothing: a caller sees the toolset's tools it may execute anyway (the
    intersection with its own rights). An inactive toolset answers 404.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200, unique=True)
    slug = models.SlugField(max_length=64, unique=True, help_text="Served at /mcp/<slug>.")
    description = models.TextField(blank=True)
    tools = models.ManyToManyField(Tool, related_name="toolsets", blank=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
