"""Reads of execution records, always through who may see them."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from executions.models import Execution
from registry import authorization


def execution_visible_to(user, delegation=None) -> QuerySet[Execution]:
    """Reviewers and platform admins see every execution; others their own and their agents'.

    An OAuth client acting for ``user`` (``delegation``) sees only the calls it made for
    them, whatever the person may see: a client let "run tools for me" is not let read
    the person's other records, a reviewer's least of all."""
    qs = Execution.objects.select_related("tool", "agent", "role")
    if delegation is not None:
        return qs.filter(principal=user, oauth_client_id=delegation.client_id)
    if authorization.is_platform_admin(user) or authorization.is_reviewer(user):
        return qs
    return qs.filter(Q(principal=user) | Q(agent__owner=user))
