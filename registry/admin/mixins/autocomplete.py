"""Autocomplete widgets whose search keys are checked before the query runs."""

from __future__ import annotations

from django.contrib.admin.widgets import AutocompleteSelect, AutocompleteSelectMultiple
from django.core.exceptions import ValidationError


class _KeyCheckedAutocomplete:
    """An autocomplete box that shows only chosen values the related key can take.

    Django's looks the chosen values up in the related table as they are: a value
    that is not a key at all (``?tool=xyz`` on an add page, or posted back with
    the form's errors) fails that query, a server error, instead of showing no
    choice (and the form field saying the choice is not valid).
    """

    def optgroups(self, name, value, attr=None):
        return super().optgroups(name, [v for v in value if self._is_key(v)], attr)

    def _is_key(self, value) -> bool:
        remote = self.field.remote_field
        opts = remote.model._meta
        target = opts.get_field(getattr(remote, "field_name", None) or opts.pk.attname)
        try:
            target.to_python(value)
        except (ValidationError, ValueError, TypeError):
            return False
        return True


class KeyCheckedAutocompleteSelect(_KeyCheckedAutocomplete, AutocompleteSelect):
    pass


class KeyCheckedAutocompleteSelectMultiple(_KeyCheckedAutocomplete, AutocompleteSelectMultiple):
    pass


class KeyCheckedAutocompleteMixin:
    """``autocomplete_fields`` with boxes that never look up a value that is not a key."""

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if "widget" not in kwargs and db_field.name in self.get_autocomplete_fields(request):
            kwargs["widget"] = KeyCheckedAutocompleteSelect(
                db_field, self.admin_site, using=kwargs.get("using")
            )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        if "widget" not in kwargs and db_field.name in self.get_autocomplete_fields(request):
            kwargs["widget"] = KeyCheckedAutocompleteSelectMultiple(
                db_field, self.admin_site, using=kwargs.get("using")
            )
        return super().formfield_for_manytomany(db_field, request, **kwargs)
