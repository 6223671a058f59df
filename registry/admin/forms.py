"""Admin forms: JSON entry that names its mistakes, write-only secrets, and ids in range."""

from __future__ import annotations

import json

from django import forms
from django.forms.fields import InvalidJSONInput, JSONString

from registry import schema as schema_mod
from registry.models import Tool, ToolConfig, ToolParameter
from registry.services.tools import (
    TOOL_FIELDS,
    config_problem,
    non_finite_message,
    non_finite_path,
)
from toolhub import strictjson
from toolhub import text as text_rules
from toolhub.api.params import parse_id
from toolhub.api.parsers import MAX_DEPTH as BODY_MAX_DEPTH

_NO_DEFAULT_HELP = "JSON value; leave empty for no default."

# The id columns of auth_group and auth_permission are 32-bit integers on PostgreSQL.
MAX_AUTO_ID = 2**31 - 1

# The deepest nesting of arrays and objects a JSON value typed into the admin may have
# (the value itself is level 1): as deep as the API lets a request body nest.
MAX_JSON_DEPTH = BODY_MAX_DEPTH
TOO_DEEP = f"Nested more than {MAX_JSON_DEPTH} levels deep."


class JSONTooDeep(ValueError):
    """JSON text nesting arrays and objects more than ``MAX_JSON_DEPTH`` levels deep."""


class UnstorableJSON(ValueError):
    """JSON text whose strings hold a NUL character or an unpaired surrogate (``toolhub.text``)."""

    def __init__(self, path: str):
        super().__init__(f"{path}: {text_rules.MESSAGE}" if path else text_rules.MESSAGE)


def load_json_text(text: str, *, decoder=None):
    """JSON text as JSON defines it (NaN, Infinity and 1e999 are refused, not read),
    nested at most ``MAX_JSON_DEPTH`` levels deep.

    Raises ``strictjson.NotJSONNumber``, ``JSONTooDeep``, ``UnstorableJSON`` or
    ``ValueError``, never ``RecursionError``, however deep the text nests.
    """
    try:
        value = strictjson.loads(text) if decoder is None else json.loads(text, cls=decoder)
    except RecursionError:
        raise JSONTooDeep(TOO_DEEP) from None
    # Fewer opening brackets than the limit cannot nest deeper: most values skip the walk.
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and strictjson.nested_deeper_than(
        value, MAX_JSON_DEPTH
    ):
        raise JSONTooDeep(TOO_DEEP)
    where = text_rules.unstorable_path(value)
    if where is not None:
        raise UnstorableJSON(where)
    return value


def parse_json_text(text: str, *, field: str):
    """JSON text as JSON defines it: NaN, Infinity and 1e999 are refused, not read, and
    so is nesting deeper than ``MAX_JSON_DEPTH``."""
    try:
        return load_json_text(text)
    except JSONTooDeep:
        raise forms.ValidationError(f"{field}: {TOO_DEEP}") from None
    except ValueError as exc:
        raise forms.ValidationError(f"{field} is not valid JSON: {exc}") from None


class AdminJSONField(forms.JSONField):
    """The form field of every JSON column in the admin (installed in ``registry.admin``).

    Django's own reads the text with ``json.loads``: text nested a few thousand
    levels deep raises ``RecursionError`` (a server error, also when the page is
    shown again with the text in it), and ``NaN`` / ``Infinity`` are read as
    numbers no JSON column stores. Here they are form errors, as is nesting
    deeper than ``MAX_JSON_DEPTH``, and the page shows the text as it was typed.
    """

    default_error_messages = {"too_deep": TOO_DEEP}

    def _load(self, text: str):
        try:
            return load_json_text(text, decoder=self.decoder)
        except JSONTooDeep:
            raise forms.ValidationError(self.error_messages["too_deep"], code="too_deep") from None
        except (strictjson.NotJSONNumber, strictjson.UnencodableText, UnstorableJSON) as exc:
            message = str(exc).rstrip(".")
            raise forms.ValidationError(
                f"{message[:1].upper()}{message[1:]}.", code="not_finite"
            ) from None
        except ValueError:
            raise forms.ValidationError(
                self.error_messages["invalid"], code="invalid", params={"value": text}
            ) from None

    def to_python(self, value):
        if self.disabled:
            return value
        if value in self.empty_values:
            return None
        if isinstance(value, list | dict | int | float | JSONString):
            if strictjson.nested_deeper_than(value, MAX_JSON_DEPTH):
                raise forms.ValidationError(self.error_messages["too_deep"], code="too_deep")
            return value
        converted = self._load(value)
        return JSONString(converted) if isinstance(converted, str) else converted

    def bound_data(self, data, initial):
        if self.disabled:
            return initial
        if data is None:
            return None
        try:
            return self._load(data)
        except forms.ValidationError:
            return InvalidJSONInput(data)


class IdMultipleChoiceField(forms.ModelMultipleChoiceField):
    """A choice of rows by integer id that refuses, as an invalid choice, anything that is
    not an id in the column's range: such a value would overflow the database query."""

    def __init__(self, *args, max_id: int = MAX_AUTO_ID, **kwargs):
        super().__init__(*args, **kwargs)
        self.max_id = max_id

    def _check_values(self, value):
        try:
            values = frozenset(value)
        except TypeError:
            return super()._check_values(value)  # reports the invalid list
        for raw in values:
            pk = parse_id(raw)
            if pk is None or pk > self.max_id:
                raise forms.ValidationError(
                    self.error_messages["invalid_choice"],
                    code="invalid_choice",
                    params={"value": str(raw)[:40]},
                )
        return super()._check_values(value)


class FiniteJSONFormMixin:
    """JSON fields whose values may not hold NaN or Infinity: no JSON column stores them,
    and Django's JSON form field reads them."""

    def clean(self):
        data = super().clean()
        for name, field in self.fields.items():
            if isinstance(field, forms.JSONField) and name in data:
                where = non_finite_path(data[name])
                if where is not None:
                    self.add_error(name, non_finite_message(where))
        return data


class ToolForm(FiniteJSONFormMixin, forms.ModelForm):
    class Meta:
        model = Tool
        fields = list(TOOL_FIELDS)


class ToolParameterForm(FiniteJSONFormMixin, forms.ModelForm):
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


def _type_changes(tool: Tool) -> bool:
    """Whether the page changes the stored tool's type."""
    if tool.pk is None or tool._state.adding:
        return False
    return Tool.objects.filter(pk=tool.pk).exclude(type=tool.type).exists()


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
        elif self.is_bound and self._secret_ticked():
            # A page shown again (some error on it) never puts a typed secret back in it.
            self.fields["value"].widget = forms.PasswordInput(
                render_value=False, attrs={"placeholder": "secret: type it again"}
            )
        elif self.instance.pk:
            value = self.instance.plain_value
            self.initial["value"] = value if isinstance(value, str) else json.dumps(value)

    def clean(self):
        data = super().clean()
        text = data.get("value") or ""
        if self.instance.pk and self.instance.is_secret and not data.get("is_secret"):
            # Unticked, the stored secret (kept when the value is left empty) would
            # be shown to everyone who reads the tool.
            self.add_error(
                "is_secret",
                "A secret config stays secret: to make it a plain value, delete it "
                "and add it again.",
            )
            return data
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
                data["parsed_value"] = load_json_text(stripped) if stripped else ""
            except JSONTooDeep:
                self.add_error("value", TOO_DEEP)
                return data
            except (strictjson.NotJSONNumber, strictjson.UnencodableText, UnstorableJSON) as exc:
                message = str(exc).rstrip(".")
                self.add_error("value", f"{message[:1].upper()}{message[1:]}.")
                return data
            except ValueError:
                if looks_structured:
                    self.add_error("value", "Looks like JSON but does not parse.")
                data["parsed_value"] = text
        else:
            data["parsed_value"] = text
        self._check_for_executor(data)
        return data

    def _secret_ticked(self) -> bool:
        name = self.add_prefix("is_secret")
        return bool(
            self.fields["is_secret"].widget.value_from_datadict(self.data, self.files, name)
        )

    def _check_for_executor(self, data) -> None:
        """The value must suit the executor of the tool's type, as submitted on the same page
        (the inline's ``tool`` is the page's tool, its form already applied). A row left as
        it was is checked only when the type changes: other edits of the page do not wait
        for an older config to be fixed."""
        tool = data.get("tool")
        key = data.get("config_key")
        if not isinstance(tool, Tool) or not tool.type or not key or "value" in self.errors:
            return
        if not self.has_changed() and not _type_changes(tool):
            return
        message = config_problem(
            tool.type, key, data.get("parsed_value"), secret=bool(data.get("is_secret"))
        )
        if message:
            self.add_error("value", message)

    def has_changed(self):
        # A secret's empty password field must not count as a change.
        changed = super().has_changed()
        if changed and self.instance.pk and self.instance.is_secret:
            return any(name != "value" for name in self.changed_data) or bool(
                self.data.get(self.add_prefix("value"))
            )
        return changed
