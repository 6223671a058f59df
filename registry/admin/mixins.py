"""Admin plumbing shared by the registry and executions admins.

Big tables (executions, audit events) use ``NoCountAdminMixin``: no
``COUNT(*)`` for the paginator, no facet counts, no "show all", no
``date_hierarchy`` (its ``SELECT DISTINCT`` dates scan the whole table) but a
``TimeRangeFilter`` instead, and filters that never load every related row
(``InputFilter``: a small text box). ``ExportAdminMixin`` streams the current
changelist, exactly as filtered, as CSV or JSON Lines.

Every changelist is a ``GuardedChangeList`` (``GuardedChangeListMixin``): a
filter either applies or is refused, with a message and no rows, never
ignored (which would show every row) and never a server error.
"""

from __future__ import annotations

import contextlib
import datetime as dt

from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ERROR_FLAG, ChangeList
from django.contrib.admin.widgets import AutocompleteSelect, AutocompleteSelectMultiple
from django.core.exceptions import (
    EmptyResultSet,
    FieldError,
    FullResultSet,
    PermissionDenied,
    ValidationError,
)
from django.core.paginator import Paginator
from django.db import DataError, connections, transaction
from django.http import Http404, HttpResponseRedirect
from django.urls import path, reverse
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.functional import cached_property

from registry import access
from registry.exports import FORMATS, Column, export_response
from toolhub.api.params import db_integer_in_range, utc_in_range
from toolhub.exceptions import ToolHubError


class ReadOnlyAdminMixin:
    """A record viewer: nobody, superusers included, may add, change or delete."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class NoCountPaginator(Paginator):
    """Never ``COUNT(*)`` a big table: count only as far as the page after this one.

    The changelist learns "there is a next page" from one extra row, so page
    links stop one past the current page instead of at the true total. The
    rows read for that are the page itself: one query per page.
    """

    def __init__(self, *args, page_number: int = 1, **kwargs):
        super().__init__(*args, **kwargs)
        self._page_number = max(page_number, 1)
        self._window: list | None = None

    @cached_property
    def count(self):
        offset = (self._page_number - 1) * self.per_page
        if db_integer_in_range(offset + self.per_page + 1):
            self._window = list(self.object_list[offset : offset + self.per_page + 1])
        else:  # no table holds that many rows, and the database would refuse the OFFSET
            self._window = []
        return offset + len(self._window)

    def page(self, number):
        number = self.validate_number(number)  # computes count, and so the window
        if number == self._page_number and self._window is not None:
            return self._get_page(self._window[: self.per_page], number, self)
        return super().page(number)


def _unusable_lookup_value(node):
    """The first compared value in a query's WHERE tree the database cannot take, or None.

    Integers beyond a bigint and aware date-times outside the years 1-9999 in
    UTC pass ``filter()`` but fail when the query runs (SQLite: OverflowError),
    long after the admin's check of its lookup parameters.
    """
    for child in getattr(node, "children", ()):
        found = _unusable_lookup_value(child)
        if found is not None:
            return found
    rhs = getattr(node, "rhs", None)
    for value in rhs if isinstance(rhs, list | tuple | set | frozenset) else [rhs]:
        if isinstance(value, bool):
            continue
        if isinstance(value, int) and not db_integer_in_range(value):
            return node, value
        if isinstance(value, dt.datetime) and timezone.is_aware(value):
            if not utc_in_range(value):
                return node, value
    return None


# What a lookup's value can raise when Django reads it, or compiles the query: "x" for a
# number, day 31 of February, year 0 (no date has it), an integer no C long holds.
_BAD_VALUE_ERRORS = (ValueError, OverflowError, ValidationError, FieldError)


def _compile_problem(queryset) -> Exception | None:
    """What compiling ``queryset``'s SQL raises because of a compared value, or None.

    Some lookups read their value only then: ``created_at__year=0`` asks for the
    bounds of year 0, which no date has (``ValueError``), long after the admin's
    check of its lookup parameters.
    """
    try:
        queryset.query.chain().get_compiler(using=queryset.db).as_sql()
    except (EmptyResultSet, FullResultSet):
        return None
    except _BAD_VALUE_ERRORS as exc:
        return exc
    return None


@contextlib.contextmanager
def _own_savepoint(using: str):
    """A savepoint when already in a transaction, so a refused statement leaves it usable."""
    if connections[using].in_atomic_block:
        with transaction.atomic(using=using):
            yield
    else:
        yield


def lookup_problem(exc: IncorrectLookupParameters) -> str:
    """What an ``IncorrectLookupParameters`` says went wrong, in a sentence."""
    cause = exc.args[0] if exc.args else None
    while isinstance(cause, IncorrectLookupParameters):
        cause = cause.args[0] if cause.args else None
    if cause is None:
        return "the page or the filters asked for do not exist."
    if isinstance(cause, ValidationError):
        text = " ".join(cause.messages)
    else:
        text = str(cause)
    text = " ".join(text.split())
    if len(text) > 300:
        text = text[:297] + "..."
    return text if text.endswith(".") else text + "."


class GuardedChangeList(ChangeList):
    """A changelist whose filters either apply or are refused (``IncorrectLookupParameters``:
    the admin redirects to ``?e=1``), and which shows no rows on that page.

    Django's own ignores a filter that has nothing to offer (a related-object
    filter with no related rows; a custom filter without choices) even when its
    parameter is given, showing every row; it fails with a server error on
    values only the query's compilation or execution reads (``created_at__year=0``,
    a regular expression PostgreSQL cannot parse); and after a refused filter,
    ``?e=1``, it shows every row. Here each of those is a refused filter, and
    ``?e=1`` shows none.
    """

    def get_filters(self, request):
        try:
            specs, has_filters, remaining, duplicates, active = super().get_filters(request)
        except _BAD_VALUE_ERRORS as exc:  # e.g. a date hierarchy's year 10000
            raise IncorrectLookupParameters(exc) from exc
        handled = set(remaining)
        for spec in specs:
            handled.update(spec.expected_parameters())
        if self.date_hierarchy:
            handled.update(f"{self.date_hierarchy}__{part}" for part in ("year", "month", "day"))
        ignored = sorted(set(self.get_filters_params()) - handled)
        if ignored:
            raise IncorrectLookupParameters(
                f"'{ignored[0]}' cannot filter this list: it has no values to choose from."
            )
        return specs, has_filters, remaining, duplicates, active

    def get_queryset(self, request, exclude_parameters=None):
        try:
            queryset = super().get_queryset(request, exclude_parameters)
        except _BAD_VALUE_ERRORS as exc:  # raised by a filter's own queryset()
            raise IncorrectLookupParameters(exc) from exc
        problem = _compile_problem(queryset)
        if problem is not None:
            raise IncorrectLookupParameters(problem) from problem
        if ERROR_FLAG in request.GET:
            # The page a refused filter leads to: nothing, rather than every row unfiltered.
            return queryset.none()
        return queryset

    def get_results(self, request):
        # The first statement that reads rows runs here (the count, or the page itself).
        try:
            with _own_savepoint(self.queryset.db):
                super().get_results(request)
        except DataError as exc:  # a value only the database reads, e.g. a bad regex
            raise IncorrectLookupParameters(exc) from exc


class GuardedChangeListMixin:
    """Changelists that refuse what they cannot apply (``GuardedChangeList``), saying why."""

    def get_changelist(self, request, **kwargs):
        return GuardedChangeList

    def get_changelist_instance(self, request, *, report_refusal: bool = True):
        try:
            return super().get_changelist_instance(request)
        except IncorrectLookupParameters as exc:
            # The changelist redirects to ?e=1 (or, already there, shows an error page).
            if report_refusal and ERROR_FLAG not in request.GET:
                self.message_user(
                    request,
                    f"Not a valid filter of this list, so no rows are shown: {lookup_problem(exc)}",
                    messages.ERROR,
                )
            raise


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


class NoCountChangeList(GuardedChangeList):
    def get_queryset(self, request, exclude_parameters=None):
        queryset = super().get_queryset(request, exclude_parameters)
        found = _unusable_lookup_value(queryset.query.where)
        if found is not None:
            lookup, value = found
            target = getattr(getattr(lookup, "lhs", None), "target", None)
            name = getattr(target, "attname", None) or "a filter"
            raise IncorrectLookupParameters(f"{name}: '{value}' is out of range.")
        return queryset

    def get_results(self, request):
        super().get_results(request)
        window = getattr(self.paginator, "_window", None)
        if window is not None and self.page_num == 1 and not self.multi_page:
            # A single short page: the paginator has read it already; don't read it again.
            self.result_list = window


class NoCountAdminMixin(GuardedChangeListMixin):
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER  # facets COUNT every choice over the table
    # "Show all" would load the whole table: the paginator's count is only a lower bound.
    list_max_show_all = 0
    date_hierarchy = None  # use TimeRangeFilter: the hierarchy runs DISTINCT over all rows
    paginator = NoCountPaginator

    def get_changelist(self, request, **kwargs):
        return NoCountChangeList

    def get_paginator(self, request, queryset, per_page, orphans=0, allow_empty_first_page=True):
        try:
            page_number = int(request.GET.get("p", 1))
        except ValueError:
            page_number = 1
        return NoCountPaginator(
            queryset,
            per_page,
            orphans=orphans,
            allow_empty_first_page=allow_empty_first_page,
            page_number=page_number,
        )


def _hidden_params(changelist, own: list[str]) -> list[tuple[str, str]]:
    """The changelist's other query parameters, to carry through a filter's GET form."""
    hidden = []
    for key, values in sorted(changelist.filter_params.items()):
        if key in own:
            continue
        for value in values if isinstance(values, list) else [values]:
            hidden.append((key, value))
    return hidden


class InputFilter(admin.SimpleListFilter):
    """A filter typed into a small box (a name or an id) instead of a list of every row.

    ``lookups`` may offer a few quick links; subclasses implement ``filter``.
    """

    template = "admin/toolhub/input_filter.html"
    placeholder = ""

    def lookups(self, request, model_admin):
        return []

    def has_output(self):
        return True

    def queryset(self, request, queryset):
        value = (self.value() or "").strip()
        if not value:
            return queryset
        return self.filter(queryset, value)

    def filter(self, queryset, value: str):
        raise NotImplementedError

    def choices(self, changelist):
        yield from super().choices(changelist)
        yield {
            "form": True,
            "name": self.parameter_name,
            "value": self.value() or "",
            "placeholder": self.placeholder,
            "hidden": _hidden_params(changelist, [self.parameter_name]),
        }


def quarter_start(moment: dt.datetime) -> dt.datetime:
    local = timezone.localtime(moment)
    month = 3 * ((local.month - 1) // 3) + 1
    return local.replace(month=month, day=1, hour=0, minute=0, second=0, microsecond=0)


def previous_quarter_start(start: dt.datetime) -> dt.datetime:
    if start.month == 1:
        return start.replace(year=start.year - 1, month=10)
    return start.replace(month=start.month - 3)


def _parse_bound(raw: str, *, end: bool) -> dt.datetime | None:
    """A date (a whole day: from its start, or to the end of it) or a date-time.

    None for the end of 9999-12-31: no upper bound, every date-time is before it.
    """
    message = f"'{raw}' is not a date (YYYY-MM-DD) or date-time."
    try:
        # A bare date first: parse_datetime would also read it, as midnight.
        day = parse_date(raw)
        value = None if day else parse_datetime(raw)
    except ValueError:  # well-formed but impossible, e.g. month 13
        raise IncorrectLookupParameters(message) from None
    if day is not None:
        if end:
            if day == dt.date.max:
                return None
            day += dt.timedelta(days=1)
        value = dt.datetime.combine(day, dt.time.min)
    elif value is None:
        raise IncorrectLookupParameters(message)
    try:
        if timezone.is_naive(value):
            value = timezone.make_aware(value)
        in_range = utc_in_range(value)
    except OverflowError:  # naive, near the calendar's edge, in a time zone east or west of UTC
        in_range = False
    if not in_range:
        raise IncorrectLookupParameters(
            f"'{raw}' is out of range: in UTC it falls outside the years 1 to 9999."
        )
    # In UTC: PostgreSQL takes offsets up to 15:59 only, ISO 8601 (and Python) up to 23:59.
    return value.astimezone(dt.UTC)


class TimeRangeFilter(admin.ListFilter):
    """Last 24 h / 7 / 30 days, this or last quarter, or a custom from-to (GET parameters).

    Filters one indexed date-time column with a range; never asks the
    database which dates exist (what ``date_hierarchy`` does).
    """

    template = "admin/toolhub/time_range_filter.html"
    field_name = ""
    parameter_name = ""
    PERIODS = [
        ("24h", "Last 24 hours"),
        ("7d", "Last 7 days"),
        ("30d", "Last 30 days"),
        ("this_quarter", "This quarter"),
        ("last_quarter", "Last quarter"),
    ]

    def __init__(self, request, params, model, model_admin):
        super().__init__(request, params, model, model_admin)
        for name in self.expected_parameters():
            if name in params:
                values = params.pop(name)
                value = values[-1] if isinstance(values, list) else values
                if value:
                    self.used_parameters[name] = value

    @property
    def from_parameter(self) -> str:
        return f"{self.parameter_name}_from"

    @property
    def to_parameter(self) -> str:
        return f"{self.parameter_name}_to"

    def expected_parameters(self):
        return [self.parameter_name, self.from_parameter, self.to_parameter]

    def has_output(self):
        return True

    def bounds(self, now: dt.datetime | None = None):
        """(start, end) of the chosen range; either may be None (open)."""
        now = now or timezone.now()
        period = self.used_parameters.get(self.parameter_name)
        start = end = None
        if period == "24h":
            start = now - dt.timedelta(hours=24)
        elif period == "7d":
            start = now - dt.timedelta(days=7)
        elif period == "30d":
            start = now - dt.timedelta(days=30)
        elif period == "this_quarter":
            start = quarter_start(now)
        elif period == "last_quarter":
            end = quarter_start(now)
            start = previous_quarter_start(end)
        elif period:
            raise IncorrectLookupParameters(f"Unknown period '{period}'.")
        if self.from_parameter in self.used_parameters:
            start = _parse_bound(self.used_parameters[self.from_parameter], end=False)
        if self.to_parameter in self.used_parameters:
            end = _parse_bound(self.used_parameters[self.to_parameter], end=True)
        return start, end

    def queryset(self, request, queryset):
        start, end = self.bounds()
        if start is not None:
            queryset = queryset.filter(**{f"{self.field_name}__gte": start})
        if end is not None:
            queryset = queryset.filter(**{f"{self.field_name}__lt": end})
        return queryset

    def choices(self, changelist):
        period = self.used_parameters.get(self.parameter_name)
        custom = self.from_parameter in self.used_parameters or (
            self.to_parameter in self.used_parameters
        )
        yield {
            "selected": not period and not custom,
            "query_string": changelist.get_query_string(remove=[self.parameter_name]),
            "display": "Any time",
        }
        for key, label in self.PERIODS:
            yield {
                "selected": period == key and not custom,
                "query_string": changelist.get_query_string(
                    {self.parameter_name: key},
                    remove=[self.from_parameter, self.to_parameter],
                ),
                "display": label,
            }
        yield {
            "form": True,
            "from_name": self.from_parameter,
            "to_name": self.to_parameter,
            "from_value": self.used_parameters.get(self.from_parameter, ""),
            "to_value": self.used_parameters.get(self.to_parameter, ""),
            "hidden": _hidden_params(changelist, self.expected_parameters()),
        }


def time_range_filter(field_name: str, parameter_name: str, title: str) -> type[TimeRangeFilter]:
    return type(
        f"{parameter_name.title()}RangeFilter",
        (TimeRangeFilter,),
        {"field_name": field_name, "parameter_name": parameter_name, "title": title},
    )


class ExportAdminMixin(GuardedChangeListMixin):
    """'Export CSV' / 'Export JSON Lines' of the filtered changelist, and of selected rows.

    The export link carries the changelist's query string; the export view
    rebuilds the same ChangeList from it, so the file holds exactly the rows
    the filters, search and ordering select, streamed in constant memory.
    """

    export_columns: list[Column] = []
    export_basename = "export"
    export_chunk_size = 1000
    change_list_template = "admin/toolhub/export_change_list.html"
    actions = ["export_selected_csv", "export_selected_jsonl"]

    def get_urls(self):
        info = self.opts.app_label, self.opts.model_name
        export = path(
            "export/<str:fmt>/",
            self.admin_site.admin_view(self.export_view),
            name="{}_{}_export".format(*info),
        )
        return [export, *super().get_urls()]

    def export_queryset(self, request, queryset, fmt: str):
        return export_response(
            queryset,
            columns=self.export_columns,
            fmt=fmt,
            basename=self.export_basename,
            chunk_size=self.export_chunk_size,
        )

    def export_view(self, request, fmt: str):
        if not self.has_view_permission(request):
            raise PermissionDenied
        if fmt not in FORMATS:
            raise Http404(f"Unknown export format '{fmt}'.")
        try:
            changelist = self.get_changelist_instance(request, report_refusal=False)
        except IncorrectLookupParameters as exc:
            self.message_user(request, f"Cannot export: {lookup_problem(exc)}", messages.ERROR)
            info = self.opts.app_label, self.opts.model_name
            return HttpResponseRedirect(reverse("admin:{}_{}_changelist".format(*info)))
        return self.export_queryset(request, changelist.get_queryset(request), fmt)

    @admin.action(description="Export selected as CSV", permissions=["view"])
    def export_selected_csv(self, request, queryset):
        return self.export_queryset(request, queryset, "csv")

    @admin.action(description="Export selected as JSON Lines", permissions=["view"])
    def export_selected_jsonl(self, request, queryset):
        return self.export_queryset(request, queryset, "jsonl")


class PlatformAdminWritesMixin:
    """Who may do what is decided by registry.access, as in the API: platform admins
    write, reviewers read."""

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def has_view_permission(self, request, obj=None):
        return access.is_platform_admin(request.user) or access.is_reviewer(request.user)

    def has_add_permission(self, request):
        return access.is_platform_admin(request.user)

    def has_change_permission(self, request, obj=None):
        return access.is_platform_admin(request.user)

    def has_delete_permission(self, request, obj=None):
        return access.is_platform_admin(request.user)


class ServiceErrorsMixin:
    """A change form whose writes go through the services: a refusal of theirs
    (``ToolHubError``) rolls the whole form back and is shown as a message."""

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            with transaction.atomic():
                return super().changeform_view(request, object_id, form_url, extra_context)
        except ToolHubError as exc:
            report_service_error(self, request, exc)
            return HttpResponseRedirect(request.get_full_path())


def report_service_error(modeladmin: admin.ModelAdmin, request, exc: ToolHubError) -> None:
    detail = ""
    if isinstance(exc.details, list):
        detail = "; ".join(
            f"{d.get('field')}: {d.get('message')}" if isinstance(d, dict) else str(d)
            for d in exc.details
        )
    modeladmin.message_user(request, f"{exc.message} {detail}".strip(), level=messages.ERROR)
