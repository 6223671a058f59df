"""Changelists that refuse a filter they cannot apply, and big-table changelists that never count."""

from __future__ import annotations

import contextlib
import datetime as dt

from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ERROR_FLAG, ChangeList
from django.core.exceptions import (
    EmptyResultSet,
    FieldError,
    FullResultSet,
    ValidationError,
)
from django.core.paginator import Paginator
from django.db import DataError, connections, transaction
from django.utils import timezone
from django.utils.functional import cached_property

from toolhub.api.params import db_integer_in_range, utc_in_range


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
