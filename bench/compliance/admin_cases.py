"""The admin's changelists of executions and audit events: every filter they offer, search, paging."""

from __future__ import annotations

import datetime as dt
from urllib.parse import urlencode

from compliance.measure import getter
from compliance.samples import Samples

PAGES = [
    ("no filter", {}),
    ("page 2", {"p": 2}),
    ("page 200 (offset 9,950)", {"p": 200}),
    ("page 2,000 (offset 99,950)", {"p": 2000}),
]


def admin_cases(model_admin, samples: dict, request) -> list[tuple[str, dict]]:
    """One case per value of each filter the admin class offers (read from its list_filter)."""
    from django.contrib import admin

    try:
        from registry.admin.mixins import InputFilter, TimeRangeFilter
    except ImportError:  # older admin code
        InputFilter = TimeRangeFilter = ()

    cases: list[tuple[str, dict]] = list(PAGES)
    now = dt.datetime.now(dt.UTC)
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    for spec in model_admin.list_filter:
        if isinstance(spec, tuple | list):
            spec = spec[0]
        if isinstance(spec, str):
            cases += _field_cases(model_admin.model, spec, samples, today)
        elif TimeRangeFilter and issubclass(spec, TimeRangeFilter):
            cases += _time_range_cases(spec, today)
        elif InputFilter and issubclass(spec, InputFilter):
            cases += _input_cases(spec, samples, request, model_admin)
        elif issubclass(spec, admin.SimpleListFilter):
            instance = spec(request, {}, model_admin.model, model_admin)
            for value, _label in instance.lookup_choices:
                cases.append((f"{spec.parameter_name}={value}", {spec.parameter_name: value}))
    if model_admin.date_hierarchy:
        cases += _date_hierarchy_cases(model_admin.date_hierarchy, now)
    return cases


def _field_cases(model, spec: str, samples: dict, today) -> list[tuple[str, dict]]:
    """A field in list_filter: Django's date periods, or some of its values."""
    from django.db import models

    field = model._meta.get_field(spec)
    if not isinstance(field, models.DateTimeField | models.DateField):
        return [
            (f"{spec}={value}", {f"{spec}__exact": value})
            for value in samples.get(spec, [c[0] for c in field.choices or []][:3])
        ]
    tomorrow = today + dt.timedelta(days=1)
    month = today.replace(day=1)
    year = today.replace(month=1, day=1)
    return [
        (f"{spec}: {label}", {f"{spec}__gte": str(since), f"{spec}__lt": str(until)})
        for label, since, until in (
            ("today", today, tomorrow),
            ("past 7 days", today - dt.timedelta(days=7), tomorrow),
            ("this month", month, (month + dt.timedelta(days=32)).replace(day=1)),
            ("this year", year, year.replace(year=year.year + 1)),
        )
    ]


def _time_range_cases(spec, today) -> list[tuple[str, dict]]:
    cases = [
        (f"{spec.parameter_name}={key}", {spec.parameter_name: key}) for key, _ in spec.PERIODS
    ]
    day = (today - dt.timedelta(days=180)).date()
    cases.append(
        (
            f"{spec.parameter_name}_from/_to one day 6 months ago",
            {f"{spec.parameter_name}_from": str(day), f"{spec.parameter_name}_to": str(day)},
        )
    )
    return cases


def _input_cases(spec, samples: dict, request, model_admin) -> list[tuple[str, dict]]:
    name = spec.parameter_name
    cases = [(f"{name}={value}", {name: value}) for value in samples.get(name, [])]
    for value, _label in spec.lookups(spec, request, model_admin) or []:
        if value not in samples.get(name, []):
            cases.append((f"{name}={value} (quick link)", {name: value}))
    return cases


def _date_hierarchy_cases(field: str, now) -> list[tuple[str, dict]]:
    return [
        ("date_hierarchy year", {f"{field}__year": now.year}),
        ("date_hierarchy year+month", {f"{field}__year": now.year, f"{field}__month": now.month}),
        (
            "date_hierarchy day",
            {f"{field}__year": now.year, f"{field}__month": now.month, f"{field}__day": now.day},
        ),
    ]


def _filter_names(model_admin) -> set:
    return {getattr(s, "parameter_name", s) for s in model_admin.list_filter}


def _run_all(b, group: str, client, base: str, cases) -> None:
    for label, params in cases:
        b.run(group, label, getter(client, base + ("?" + urlencode(params) if params else "")))


def run_execution_admin(b, client, s: Samples, request, exec_admin) -> None:
    busy, quiet, tools, agents = s.busy, s.quiet, s.tool_names, s.agent_names
    exec_samples = {
        "status": ["succeeded", "failed", "expired", "pending_approval"],
        "tool_type": ["http", "python"],
        "error_type": ["timeout", "read_only_violation"],
        "tool": [tools[busy[0]], str(busy[0])],
        "agent": [agents[busy[1]], str(busy[1])],
        "role": ["analyst"],
        "principal": [s.agent_users[busy[1]], "owner-1"],
    }
    cases = admin_cases(exec_admin, exec_samples, request)
    filter_names = _filter_names(exec_admin)
    if {"tool", "agent", "created"} <= filter_names:
        quarter = {"created": "last_quarter"}
        cases += [
            (
                "tool X + agent Y + created=last_quarter (busy pair)",
                {"tool": tools[busy[0]], "agent": agents[busy[1]], **quarter},
            ),
            (
                "tool X + agent Y + created=last_quarter (quiet pair)",
                {"tool": tools[quiet[0]], "agent": agents[quiet[1]], **quarter},
            ),
            (
                "tool X + agent Y + last_quarter, page 20",
                {"tool": tools[busy[0]], "agent": agents[busy[1]], **quarter, "p": 20},
            ),
        ]
    if {"tool", "status"} <= filter_names:
        cases += [
            ("status=failed + tool X", {"status__exact": "failed", "tool": tools[busy[0]]}),
            (
                "status=expired + tool (recent, rare)",
                {"status__exact": "expired", "tool": str(s.rare_tool)},
            ),
        ]
    cases += [
        ("search: execution id", {"q": str(s.mid["id"])}),
        ("search: request id", {"q": s.mid["request_id"]}),
        ("search: tool name", {"q": s.mid["tool_name"]}),
        ("search: no match", {"q": "no-such-thing"}),
    ]
    base = "/admin/executions/execution/"
    _run_all(b, "admin exec", client, base, cases)
    b.run("admin exec", "detail page", getter(client, f"{base}{s.mid['id']}/change/"))


def run_audit_admin(b, client, s: Samples, request, audit_admin) -> None:
    actor = s.agent_users[s.busy[1]]
    audit_samples = {
        "action": ["execution.succeeded", "execution.expired", "tool.created", "grant.created"],
        "actor": [actor, "approver-1", "system", "bench-admin"],
    }
    cases = admin_cases(audit_admin, audit_samples, request)
    if {"action", "actor", "occurred"} <= _filter_names(audit_admin):
        cases.append(
            (
                "action=execution. + actor + occurred=last_quarter",
                {"action": "execution.", "actor": actor, "occurred": "last_quarter"},
            )
        )
    cases += [
        ("search: execution id (target_id)", {"q": str(s.mid["id"])}),
        ("search: request id", {"q": s.ev["request_id"]}),
        ("search: event id", {"q": str(s.ev["id"])}),
        ("search: no match", {"q": "no-such-thing"}),
        (
            "link from execution page: ?target_type&target_id",
            {"target_type": "executions.execution", "target_id": str(s.mid["id"])},
        ),
        ("link from event page: ?request_id", {"request_id": s.ev["request_id"]}),
    ]
    base = "/admin/registry/auditevent/"
    _run_all(b, "admin audit", client, base, cases)
    b.run("admin audit", "detail page", getter(client, f"{base}{s.ev['id']}/change/"))
    b.run("admin", "dashboard 7d", getter(client, "/admin/dashboard/?range=7d"), runs=2)
    b.run("admin", "dashboard 90d", getter(client, "/admin/dashboard/?range=90d"), runs=2)
