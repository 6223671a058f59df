"""The audit log's integrity in the admin: the panel, "Verify now", and altered records flagged.

The panel (on the admin's home page and the audit pages) shows the latest
verification run, its result and time, and the chain's head; "Verify now" queues
a run (``registry.services.verification_runs``), which a worker does, or the
request itself in the embedded mode. A record the latest finished run named is
flagged on its page and found by the list filter ``IntegrityFilter``.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from registry import authorization, integrity
from registry.models import VerificationStatus
from registry.services.verification_runs import may_verify, verification_request
from toolhub.exceptions import ToolHubError


def may_see_integrity(user) -> bool:
    """Who sees the panel: those who may read the audit log."""
    return (
        authorization.is_reviewer(user)
        or authorization.is_platform_admin(user)
        or (user.is_active and user.has_perm("registry.view_auditevent"))
    )


def integrity_context(request) -> dict:
    """The panel's context: the state of verification and whether the user may start one."""
    return {
        **integrity.verification_state(),
        "may_verify": may_verify(request.user),
        "verify_url": reverse("admin:registry_auditevent_verify"),
        "next_url": request.get_full_path(),
        "altered_executions_url": reverse("admin:executions_execution_changelist")
        + "?integrity=altered",
        "altered_events_url": reverse("admin:registry_auditevent_changelist")
        + "?integrity=altered",
    }


def findings_context(target_type: str, object_id) -> dict:
    """``integrity_findings``: what the latest run found wrong with this record (flag it)."""
    latest = integrity.verification_latest()
    return {
        "integrity_findings": integrity.verification_findings_for(target_type, str(object_id)),
        "integrity_run": latest,
    }


def verify_now_view(request):
    """POST: queue a verification run, then back to the page it was asked from (PRG)."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        back = reverse("admin:registry_auditevent_changelist")
    try:
        run, started = verification_request(actor=request.user)
    except ToolHubError as exc:
        messages.error(request, exc.message)
        return HttpResponseRedirect(back)
    run.refresh_from_db()  # in the embedded mode the run is done by now
    messages.add_message(request, *_outcome(run, started))
    return HttpResponseRedirect(back)


def _outcome(run, started: bool) -> tuple[int, str]:
    if run.status == VerificationStatus.PASSED:
        return messages.SUCCESS, (
            f"Verified: the audit log is intact up to event #{run.head_sequence} "
            f"({run.checked} events checked)."
        )
    if run.status == VerificationStatus.FAILED:
        return messages.ERROR, f"Verification failed: {run.problem_message}"
    if run.status == VerificationStatus.ERROR:
        return messages.ERROR, run.problem_message
    if not started:
        return messages.INFO, (
            f"A verification is already under way (asked by {run.requested_by_name}); "
            "reload this page to see its result."
        )
    return messages.INFO, "Verification started in a worker; reload this page to see its result."


class IntegrityFilter(admin.SimpleListFilter):
    """Records the latest finished verification found altered, deleted or unaudited."""

    title = "integrity"
    parameter_name = "integrity"
    target_type = ""

    def lookups(self, request, model_admin):
        return [("altered", "Found altered by the latest verification")]

    def queryset(self, request, queryset):
        if self.value() != "altered":
            return queryset
        pk = queryset.model._meta.pk
        ids = []
        for value in integrity.verification_flagged_ids(self.target_type):
            try:
                ids.append(pk.to_python(value))
            except ValidationError:  # a deleted record's id as its events named it
                continue
        return queryset.filter(pk__in=ids)


def integrity_filter(target_type: str) -> type[IntegrityFilter]:
    return type("RecordIntegrityFilter", (IntegrityFilter,), {"target_type": target_type})
