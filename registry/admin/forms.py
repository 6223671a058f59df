"""Admin forms: JSON entry that names its mistakes, and write-only secrets."""

from __future__ import annotations

import json

from django import forms

from registry import schema as schema_mod
from registry.models import ToolConfig, ToolParameter

_NO_DEFAULT_HELP = "JSON value; leave empty for no default."


def parse_json_text(text: str, *, field: str):
    try:
        return json.loads(text)
    except ValueError as exc:
        raise forms.ValidationError(f"{field} is not valid JSON: {exc}") from None


class ToolParameterForm(forms.ModelForm):
    default_json = forms.CharField(
        label="Default", required=False, help_text=_NO_DEFAULT_HELP, widget=forms.TextInput
    )

    class Meta:
        model = ToolParameter
        fields = [
            "name",
            "parameter_type",
            "type",
            "required",
            "default_json",
            "description",
            "json_schema",
            "position",
        ]
        widgets = {
            "description": forms.TextInput(attrs={"size": 30}),
            "json_schema": forms.Textarea(attrs={"rows": 2, "cols": 30}),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and self.instance.has_default:
            self.initial["default_json"] = json.dumps(self.instance.default)
        self.fields["json_schema"].required = False

    def clean(self):
        data = super().clean()
        text = (data.get("default_json") or "").strip()
        data["has_default"] = bool(text)
        data["default"] = parse_json_text(text, field="Default") if text else None
        fragment = data.get("json_schema") or {}
        data["json_schema"] = fragment
        problems = schema_mod.fragment_errors(fragment)
        if problems:
            self.add_error("json_schema", problems[0])
        elif data["has_default"] and data.get("type"):
            for message in schema_mod.default_errors(data["type"], fragment, data["default"]):
                self.add_error("default_json", message)
        return data

    def service_data(self) -> dict:
        editable = (
            "name",
            "parameter_type",
            "type",
            "required",
            "description",
            "json_schema",
            "position",
        )
        data = {field: self.cleaned_data[field] for field in editable}
        data["has_default"] = self.cleaned_data["has_default"]
        data["default"] = self.cleaned_data["default"]
        return data


class ToolConfigForm(forms.ModelForm):
    """Secret values are write-only: the stored value is never put in the page."""

    value = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 1, "cols": 40}),
        help_text="A JSON value or plain text. For a secret, leave empty to keep the stored value.",
    )

    class Meta:
        model = ToolConfig
        fields = ["config_key", "value", "is_secret"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and self.instance.is_secret:
            self.fields["value"].widget = forms.PasswordInput(
                render_value=False, attrs={"placeholder": "•••••••• (stored; type to replace)"}
            )
        elif self.instance.pk:
            value = self.instance.plain_value
            self.initial["value"] = value if isinstance(value, str) else json.dumps(value)

    def clean(self):
        data = super().clean()
        text = data.get("value") or ""
        keep_secret = bool(self.instance.pk and self.instance.is_secret and text == "")
        data["keep_value"] = keep_secret
        if keep_secret:
            return data
        if self.instance.pk is None and data.get("is_secret") and text == "":
            self.add_error("value", "A new secret needs a value.")
            return data
        stripped = text.strip()
        looks_structured = stripped[:1] in ("{", "[")
        if looks_structured or not data.get("is_secret"):
            try:
                data["parsed_value"] = json.loads(stripped) if stripped else ""
            except ValueError:
                if looks_structured:
                    self.add_error("value", "Looks like JSON but does not parse.")
                data["parsed_value"] = text
        else:
            data["parsed_value"] = text
        return data

    def has_changed(self):
        # A secret's empty password field must not count as a change.
        changed = super().has_changed()
        if changed and self.instance.pk and self.instance.is_secret:
            return any(name != "value" for name in self.changed_data) or bool(
                self.data.get(self.add_prefix("value"))
            )
        return changed
