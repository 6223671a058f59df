"""The integrity panel and the "altered" banner of ToolHub's admin pages."""

from __future__ import annotations

from django import template

from registry.admin.integrity import integrity_context, may_see_integrity

register = template.Library()


@register.inclusion_tag("admin/toolhub/integrity_panel.html", takes_context=True)
def integrity_panel(context) -> dict:
    """The latest verification, its result and time, the chain head, and "Verify now"."""
    request = context.get("request")
    if request is None or not may_see_integrity(request.user):
        return {"show": False}
    return {"show": True, "csrf_token": context.get("csrf_token"), **integrity_context(request)}


@register.inclusion_tag("admin/toolhub/integrity_banner.html")
def integrity_banner(findings, run) -> dict:
    """A clear "altered" banner on the page of a record the latest verification named."""
    return {"findings": findings, "run": run}
