"""What the tool page shows beside its fields: the failure mode, the pinned definition
under review, the audit trail and the derived input schema."""

from __future__ import annotations

import json

from django.contrib import admin
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from registry.admin.audit import object_audit_url
from registry.definitions import definition_diff_html


class ToolDisplayMixin:
    """Read-only columns and fields of ``ToolAdmin``."""

    @admin.display(description="If the limits store is down")
    def failure_mode(self, obj):
        if obj is None or obj._state.adding:
            return "—"
        if obj.is_high_risk:
            return "Fail closed: calls are refused (high-risk tool: tool_metadata risk high/critical or safety destructive)."
        return "Fail open: calls are admitted uncounted and a warning is logged."

    @admin.display(description="Quarantined", boolean=True)
    def quarantined_display(self, obj):
        return obj.quarantined_at is not None

    @admin.display(description="Definition")
    def definition_review(self, obj):
        """The approved definition's hash; when quarantined, the pending one beside it."""
        if obj is None or obj._state.adding:
            return "—"
        approved = obj.approved_definition_hash or "none"
        if obj.quarantined_at is None:
            return format_html("Approved (sha256 {}).", approved)
        head = format_html(
            "<p><strong>Quarantined</strong> since {} ({}): calls are refused with "
            "tool_definition_changed. Approved sha256 {}; pending sha256 {}. A platform "
            "admin approves or rejects it with the actions of the tool list.</p>",
            obj.quarantined_at,
            obj.get_quarantine_reason_display(),
            approved,
            obj.pending_definition_hash or "none (rejected)",
        )
        if obj.pending_definition is None:
            return head
        # difflib.HtmlDiff escapes the definitions' text itself.
        table = definition_diff_html(obj.approved_definition, obj.pending_definition)
        return head + mark_safe(table)

    @admin.display(description="Category")
    def category_display(self, obj):
        return obj.category or "—"

    @admin.display(description="Audit trail")
    def audit_trail(self, obj):
        if obj is None or obj._state.adding:
            return "—"
        return format_html(
            '<a href="{}">Audit events of this tool and of its parameters, configs, grants '
            "and rate limits</a>",
            object_audit_url(obj),
        )

    @admin.display(description="Input JSON Schema (derived from the input parameters)")
    def input_schema_display(self, obj):
        if obj is None or obj._state.adding:
            return "—"
        return format_html(
            '<pre class="json-wrap">{}</pre>', json.dumps(obj.input_schema(), indent=2)
        )
