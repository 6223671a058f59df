"""Changelist filters for big tables: a text-box filter and a time range filter."""

from __future__ import annotations

import datetime as dt

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from toolhub.api.params import utc_in_range


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
    """Last hour / 24 h / 7 / 30 days, this or last quarter, or a custom from-to (GET parameters).

    Filters one indexed date-time column with a range; never asks the
    database which dates exist (what ``date_hierarchy`` does).
    """

    template = "admin/toolhub/time_range_filter.html"
    field_name = ""
    parameter_name = ""
    PERIODS = [
        ("1h", "Last hour"),
        ("24h", "Last 24 hours"),
        ("7d", "Last 7 days"),
        ("30d", "Last 30 days"),
        ("this_quarter", "This quarter"),
        ("last_quarter", "Last quarter"),
    ]
    RECENT = {
        "1h": dt.timedelta(hours=1),
        "24h": dt.timedelta(hours=24),
        "7d": dt.timedelta(days=7),
        "30d": dt.timedelta(days=30),
    }

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
        if period in self.RECENT:
            start = now - self.RECENT[period]
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
