"""The tool page's writes, each through the registry services (and so the audit log)."""

from __future__ import annotations

from django.db import transaction
from django.urls import reverse

from registry.admin.forms import ToolParameterForm
from registry.admin.mixins import report_service_error
from registry.models import RateLimitRule, Tool, ToolConfig, ToolGrant, ToolParameter
from registry.services import grants as grant_services
from registry.services import limits as limit_services
from registry.services import tools as services
from toolhub.exceptions import ToolHubError


class ToolWritesMixin:
    """Saves and deletes of ``ToolAdmin``: the tool, its inlines, deletions."""

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
            grant, _ = grant_services.grant_create(
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
            grant_services.grant_revoke(actor=request.user, grant=instance)
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
