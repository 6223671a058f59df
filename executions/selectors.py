"""Reads of execution records, always through who may see them."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from executions.models import Execution
from registry import authorization


def execution_visible_to(user) -> QuerySet[Execution]:
    """Reviewers and platform admins see every execution; others their own and their agents'."""
    qs = Execution.objects.select_related("tool", "agent", "role")
    if authorization.is_platform_admin(user) or authorization.is_reviewer(user):
        return qs
    return qs.filter(Q(principal=user) | Q(agent__owner=user))
