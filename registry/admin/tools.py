"""The tool catalog in the admin. Every save goes through the registry services (and so the audit log)."""

from __future__ import annotations

import json

from django.contrib import admin, messages
from django.db import transaction
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from registry import access
from registry.admin.access import ToolGrantInline
from registry.admin.audit import object_audit_url
from registry.admin.forms import ToolConfigForm, ToolForm, ToolParameterForm
from registry.admin.mixins import (
    GuardedChangeListMixin,
    ServiceErrorsMixin,
    report_service_error,
)
from registry.definitions import definition_diff_html
from registry.models import Action, RateLimitRule, Tool, ToolConfig, ToolGrant, ToolParameter
from registry.services import access as access_services
from registry.services import limits as limit_services
from registry.services import pinning
from registry.services import tools as services
from toolhub.exceptions import ToolHubError

APPROVAL_FIELDS = ("requires_approval", "approval_condition", "approval_ttl_seconds")


def _manages(request, tool) -> bool:
    """May the user manage this one tool (a ``manage`` grant, as the API asks)?"""
    return tool is not None and access.can(request.user, Action.MANAGE, tool)


class ManagedToolPartsMixin:
    """Parts of a tool (parameters, configs, rate limits) that those who may manage the
    tool change on its page, as they may through the API; ``obj`` is the tool."""

    def has_view_permission(self, request, obj=None):
        return super().has_view_permission(request, obj) or (
            obj is not None and access.can(request.user, Action.READ, obj)
        )

    def get_queryset(self, request):
        # Django empties an inline's rows unless the user holds the model's own
        # view or change permission, asked without the tool; here that is decided per
        # tool (has_view_permission(request, obj)) before the inline is shown at all,
        # and the formset keeps only this tool's rows.
        return admin.options.BaseModelAdmin.get_queryset(self, request)

    def has_add_permission(self, request, obj=None):
        return super().has_add_permission(request, obj) or _manages(request, obj)

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) or _manages(request, obj)

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) or _manages(request, obj)


class ToolParameterInline(ManagedToolPartsMixin, admin.TabularInline):
    model = ToolParameter
    form = ToolParameterForm
    extra = 0
    ordering = ["parameter_type", "position", "name"]


class ToolConfigInline(ManagedToolPartsMixin, admin.TabularInline):
    model = ToolConfig
    form = ToolConfigForm
    extra = 0
    fields = ["config_key", "value", "is_secret", "shown_value"]
    readonly_fields = ["shown_value"]

    def get_fields(self, request, obj=None):
        # Read-only inlines render fields from the object, and ToolConfig.value is the
        # decrypted secret: people who cannot change configs see only the masked value.
        fields = list(super().get_fields(request, obj))
        if not self.has_change_permission(request, obj):
            fields = [f for f in fields if f != "value"]
        return fields

    @admin.display(description="Current value")
    def shown_value(self, obj):
        if obj is None or obj._state.adding:
            return "—"
        value = obj.display_value
        return value if isinstance(value, str) else json.dumps(value)


class RateLimitRuleInline(ManagedToolPartsMixin, admin.TabularInline):
    model = RateLimitRule
    extra = 0
    fields = ["scope", "max_requests", "time_window_seconds", "is_active", "description"]
    verbose_name_plural = (
        "Rate limits (all must pass; rules for all tools are under Rate limit rules)"
    )


class CategoryFilter(admin.SimpleListFilter):
    title = "category"
    parameter_name = "category"

    def lookups(self, request, model_admin):
        categories = set()
        for metadata in Tool.objects.values_list("tool_metadata", flat=True).distinct()[:500]:
            if isinstance(metadata, dict) and metadata.get("category"):
                categories.add(str(metadata["category"]))
        # The category asked for is a choice even when no tool has it: the filter then
        # applies (no rows), where a filter without choices would be left out.
        if self.value():
            categories.add(self.value())
        return [(c, c) for c in sorted(categories)]

    def queryset(self, request, queryset):
        if self.value():
            return queryset.filter(tool_metadata__category=self.value())
        return queryset


class QuarantineFilter(admin.SimpleListFilter):
    title = "definition"
    parameter_name = "quarantined"

    def lookups(self, request, model_admin):
        return [("yes", "Quarantined (changed or new)"), ("no", "Approved")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(quarantined_at__isnull=False)
        if self.value() == "no":
            return queryset.filter(quarantined_at__isnull=True)
        return queryset


@admin.register(Tool)
class ToolAdmin(GuardedChangeListMixin, ServiceErrorsMixin, admin.ModelAdmin):
    """The catalog. Platform admins and reviewers see every tool; other staff see the
    tools they may read and change those they may manage (a ``manage`` grant), as the
    API lets them. Creating and deleting tools and granting stay with platform admins."""

    form = ToolForm
    list_display = [
        "name",
        "type",
        "version",
        "category_display",
        "is_active",
        "requires_approval",
        "quarantined_display",
        "updated_at",
    ]
    list_filter = ["type", "is_active", "requires_approval", QuarantineFilter, CategoryFilter]
    search_fields = ["name", "description"]
    ordering = ["name"]
    inlines = [ToolParameterInline, ToolConfigInline, ToolGrantInline, RateLimitRuleInline]
    actions = [
        "activate_tools",
        "deactivate_tools",
        "approve_pending_definitions",
        "reject_pending_definitions",
    ]
    readonly_fields = [
        "id",
        "created_by",
        "created_at",
        "updated_at",
        "audit_trail",
        "input_schema_display",
        "failure_mode",
        "definition_review",
    ]
    fieldsets = [
        (
            None,
            {"fields": ["name", "description", "type", "version", "is_active", "tool_metadata"]},
        ),
        (
            "Execution controls",
            {
                "fields": [
                    "timeout_seconds",
                    "max_retries",
                    "cache_ttl_seconds",
                    "max_concurrency",
                    "max_response_bytes",
                    "requires_approval",
                    "approval_condition",
                    "approval_ttl_seconds",
                    "failure_mode",
                ]
            },
        ),
        ("Pinned definition", {"fields": ["definition_review"]}),
        (
            "Record",
            {
                "fields": [
                    "id",
                    "created_by",
                    "created_at",
                    "updated_at",
                    "audit_trail",
                    "input_schema_display",
                ]
            },
        ),
    ]

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

    # Writes go through the services so every change is audited.

    _TOOL_FIELDS = services.TOOL_FIELDS

    def save_model(self, request, obj, form, change):
        data = {f: form.cleaned_data[f] for f in self._TOOL_FIELDS if f in form.cleaned_data}
        if change:
            changed = {f: data[f] for f in form.changed_data if f in data}
            if changed:
                # A new type is checked against the configs once the inlines are saved.
                services.tool_update(
                    actor=request.user, tool=obj, data=changed, _check_configs=False
                )
        else:
            name, type_ = data.pop("name"), data.pop("type")
            created = services.tool_create(actor=request.user, name=name, type=type_, **data)
            obj.pk = created.pk
            obj._state.adding = False
        obj.refresh_from_db()

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        if change and "type" in form.changed_data:
            services.check_tool_configs(Tool.objects.get(pk=form.instance.pk))

    # Per-tool rights (guardian object permissions through registry.access).

    @staticmethod
    def _sees_all(request) -> bool:
        return access.is_platform_admin(request.user) or access.is_reviewer(request.user)

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if self._sees_all(request):
            return queryset
        return access.restrict(queryset, request.user, Action.READ)

    def _reads_some(self, request) -> bool:
        return (
            request.user.is_staff
            and access.restrict(Tool.objects.all(), request.user, Action.READ).exists()
        )

    def has_module_permission(self, request):
        return super().has_module_permission(request) or self._reads_some(request)

    def has_view_permission(self, request, obj=None):
        if super().has_view_permission(request, obj):
            return True
        if obj is None:
            return self._reads_some(request)
        return access.can(request.user, Action.READ, obj)

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) or _manages(request, obj)

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if not access.is_platform_admin(request.user):
            # As in the API: only platform admins turn approval on or off or change it.
            fields += [f for f in APPROVAL_FIELDS if f not in fields]
        return fields

    def save_formset(self, request, form, formset, change):
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        tool = form.instance
        for inline_form in formset.forms:
            if not hasattr(inline_form, "cleaned_data") or not inline_form.cleaned_data:
                continue
            instance = inline_form.instance
            if inline_form in formset.deleted_forms:
                if instance.pk:
                    self._delete_inline(request, instance)
                    formset.deleted_objects.append(instance)
                continue
            if not inline_form.has_changed():
                continue
            saved = self._save_inline(request, tool, inline_form)
            if instance.pk and not instance._state.adding:
                formset.changed_objects.append((saved, inline_form.changed_data))
            else:
                formset.new_objects.append(saved)

    def _save_inline(self, request, tool, inline_form):
        instance = inline_form.instance
        if isinstance(instance, RateLimitRule):
            data = {f: inline_form.cleaned_data[f] for f in limit_services.FIELDS}
            if instance._state.adding:
                return limit_services.rate_limit_create(actor=request.user, tool=tool, **data)
            return limit_services.rate_limit_update(actor=request.user, rule=instance, data=data)
        if isinstance(instance, ToolGrant):
            grant, _ = access_services.grant_create(
                actor=request.user,
                role=inline_form.cleaned_data["role"],
                action=inline_form.cleaned_data["action"],
                tool=tool,
            )
            return grant
        if isinstance(inline_form, ToolParameterForm):
            data = inline_form.service_data()
            if instance.pk and not instance._state.adding:
                return services.parameter_update(actor=request.user, parameter=instance, data=data)
            data.pop("has_default")
            if not inline_form.cleaned_data["has_default"]:
                data.pop("default")
            return services.parameter_create(actor=request.user, tool=tool, **data)
        cleaned = inline_form.cleaned_data
        if cleaned.get("keep_value"):
            # Only the key or the secret flag changed: keep the stored value.
            value = instance.__class__.objects.get(pk=instance.pk).value
        else:
            value = cleaned.get("parsed_value")
        original_key = inline_form.initial.get("config_key")
        if original_key and original_key != cleaned["config_key"]:
            old = ToolConfig.objects.get(pk=instance.pk)
            services.config_delete(actor=request.user, config=old)
        config, _ = services.config_set(
            actor=request.user,
            tool=tool,
            config_key=cleaned["config_key"],
            config_value=value,
            is_secret=cleaned.get("is_secret", False),
        )
        return config

    def _delete_inline(self, request, instance):
        if isinstance(instance, RateLimitRule):
            limit_services.rate_limit_delete(actor=request.user, rule=instance)
        elif isinstance(instance, ToolGrant):
            access_services.grant_revoke(actor=request.user, grant=instance)
        elif isinstance(instance, ToolParameter):
            services.parameter_delete(actor=request.user, parameter=instance)
        else:
            services.config_delete(actor=request.user, config=instance)

    def delete_model(self, request, obj):
        services.tool_delete(actor=request.user, tool=obj)

    def delete_queryset(self, request, queryset):
        for tool in queryset:
            services.tool_delete(actor=request.user, tool=tool)

    def delete_view(self, request, object_id, extra_context=None):
        try:
            with transaction.atomic():
                return super().delete_view(request, object_id, extra_context)
        except ToolHubError as exc:
            report_service_error(self, request, exc)
            from django.http import HttpResponseRedirect

            return HttpResponseRedirect(reverse("admin:registry_tool_change", args=[object_id]))

    @admin.action(description="Activate selected tools", permissions=["change"])
    def activate_tools(self, request, queryset):
        for tool in queryset:
            services.tool_activate(actor=request.user, tool=tool)
        self.message_user(request, f"Activated {queryset.count()} tool(s).", messages.SUCCESS)

    @admin.action(description="Deactivate selected tools", permissions=["change"])
    def deactivate_tools(self, request, queryset):
        for tool in queryset:
            services.tool_deactivate(actor=request.user, tool=tool)
        self.message_user(request, f"Deactivated {queryset.count()} tool(s).", messages.SUCCESS)

    def _decide(self, request, queryset, decide, verb: str) -> None:
        if not access.is_platform_admin(request.user):
            self.message_user(
                request, "Only platform admins decide on definitions.", messages.ERROR
            )
            return
        done = 0
        for tool in queryset.filter(quarantined_at__isnull=False):
            try:
                decide(actor=request.user, tool=tool, reason=f"{verb} in the admin")
                done += 1
            except ToolHubError as exc:
                self.message_user(request, f"{tool.name}: {exc.message}", messages.ERROR)
        self.message_user(request, f"{verb} the pending definition of {done} tool(s).")

    @admin.action(
        description="Approve pending definitions (platform admins)", permissions=["change"]
    )
    def approve_pending_definitions(self, request, queryset):
        self._decide(request, queryset, pinning.tool_definition_approve, "Approved")

    @admin.action(
        description="Reject pending definitions (platform admins)", permissions=["change"]
    )
    def reject_pending_definitions(self, request, queryset):
        self._decide(request, queryset, pinning.tool_definition_reject, "Rejected")
