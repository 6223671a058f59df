"""Template tags of ToolHub's admin pages."""

from __future__ import annotations

from django import template

from executions.admin_dashboard import may_view_dashboard

register = template.Library()


@register.simple_tag(takes_context=True)
def dashboard_visible(context) -> bool:
    """Whether the page's user may open the usage dashboard (reviewers, platform admins)."""
    request = context.get("request")
    return bool(request is not None and may_view_dashboard(request.user))
