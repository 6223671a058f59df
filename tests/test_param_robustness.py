"""Out-of-range and malformed query parameters: a 400 naming the parameter, never a 500.

Dates that leave the years 1-9999 when converted to UTC, cursors whose
position is not a value of the ordering field, ids beyond the database's
integer range or written in non-ASCII digits, and admin URLs with an id
that is not a UUID.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from executions.models import Execution
from registry.models import AuditEvent
from registry.services import grants as grant_services
from registry.services import roles as role_services
from registry.services import tools as tool_services
from toolhub.api.params import MAX_DB_INTEGER, parse_id

pytestmark = pytest.mark.django_db

LATE = "9999-12-31T23:59:59-12:00"  # the year 10000 in UTC
EARLY = "0001-01-01T00:00:00+12:00"  # the year 0 in UTC
HUGE = "99999999999999999999999"
ARABIC_ONE = "\u0661"  # ARABIC-INDIC DIGIT ONE: str.isdecimal() is true, int() reads 1

EXECUTIONS_ADMIN = reverse("admin:executions_execution_changelist")
AUDIT_ADMIN = reverse("admin:registry_auditevent_changelist")


def cursor(**tokens: str) -> str:
    """A cursor as the API encodes one: base64 of a query string (o offset, r reverse, p position)."""
    return base64.b64encode(urlencode(tokens).encode()).decode()


def assert_names(response, field: str) -> dict:
    """A 400 whose body names ``field``, in the details and in the message."""
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert [d["field"] for d in error["details"]] == [field], error
    assert field in error["message"]
    return error


@pytest.fixture
def tool(db):
    return tool_services.tool_create(actor=None, name="robust_tool", type="http")


@pytest.fixture
def admin_client(reviewer_user) -> Client:
    client = Client()
    client.force_login(reviewer_user)
    return client


@pytest.fixture
def one_execution(tool, reviewer_user):
    return Execution.objects.create(
        tool=tool, tool_name=tool.name, tool_type="http", principal=reviewer_user
    )


# The shared parsers.


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", 1),
        ("007", 7),
        (str(MAX_DB_INTEGER), MAX_DB_INTEGER),
        (str(MAX_DB_INTEGER + 1), None),
        (HUGE, None),
        ("9" * 5000, None),  # beyond what int() converts at all
        ("0", None),
        ("-3", None),
        ("+3", None),
        (" 3", None),
        ("3\n", None),
        ("1.0", None),
        (ARABIC_ONE, None),
        ("\uff11", None),  # a full-width 1
        ("", None),
    ],
)
def test_parse_id_takes_ascii_digits_within_the_integer_range(raw, expected):
    assert parse_id(raw) == expected


# 1. Dates that overflow when converted to UTC.


@pytest.mark.parametrize(
    ("name", "value"),
    [("created_after", LATE), ("created_before", EARLY), ("created_after", EARLY)],
)
def test_execution_list_refuses_dates_outside_utc(
    reviewer_client, one_execution, tool, name, value
):
    for url in ("/api/v1/executions", f"/api/v1/executions/tool/{tool.pk}"):
        error = assert_names(reviewer_client.get(url, {name: value}), name)
        assert value in error["message"] and "UTC" in error["message"]
        # The extreme dates that fit are fine.
        edges = {"created_after": "0001-01-01T00:00:00Z", "created_before": "9999-12-31T23:59:59Z"}
        response = reviewer_client.get(url, edges)
        assert response.status_code == 200, response.content
        assert [row["id"] for row in response.json()["results"]] == [str(one_execution.pk)]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_execution_export_refuses_dates_outside_utc_before_streaming(
    reviewer_client, one_execution, fmt
):
    export = "/api/v1/executions/export"
    for name, value in (("created_after", LATE), ("created_before", EARLY)):
        assert_names(reviewer_client.get(export, {"format": fmt, name: value}), name)
    edges = {"format": fmt, "created_after": "0001-01-01T00:00:00Z"}
    response = reviewer_client.get(export, {**edges, "created_before": "9999-12-31T23:59:59Z"})
    assert response.status_code == 200
    assert str(one_execution.pk) in b"".join(response.streaming_content).decode()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("occurred_after", LATE),
        ("occurred_before", EARLY),
        ("occurred_after", "9999-12-31T23:59:59.999999-00:01"),
    ],
)
def test_audit_refuses_dates_outside_utc(reviewer_client, name, value):
    assert_names(reviewer_client.get("/api/v1/audit", {name: value}), name)
    assert_names(reviewer_client.get("/api/v1/audit/export", {name: value}), name)


@pytest.mark.parametrize("offset", ["+16:00", "-20:00", "+23:59"])
def test_offsets_postgresql_cannot_store_are_read_in_utc(
    reviewer_client, one_execution, tool, offset
):
    """ISO 8601 offsets go to ±23:59, PostgreSQL's to ±15:59: the value is compared in UTC."""
    when = f"2000-01-01T00:00:00{offset}"
    checks = [
        ("/api/v1/executions", {"created_after": when}),
        ("/api/v1/executions", {"created_before": "2999-01-01T00:00:00" + offset}),
        (f"/api/v1/executions/tool/{tool.pk}", {"created_after": when}),
        ("/api/v1/executions/export", {"format": "jsonl", "created_after": when}),
        ("/api/v1/audit", {"occurred_after": when}),
        ("/api/v1/audit/export", {"format": "jsonl", "occurred_before": when}),
        ("/api/v1/stats", {"from": when, "to": "2000-01-05T00:00:00" + offset}),
    ]
    for url, params in checks:
        response = reviewer_client.get(url, params)
        assert response.status_code == 200, (url, params, response.content[:300])
    listed = reviewer_client.get("/api/v1/executions", {"created_after": when}).json()
    assert [row["id"] for row in listed["results"]] == [str(one_execution.pk)]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"from": "9999-12-31"}, "from"),  # the default 7 days after it leave the calendar
        ({"from": "9999-12-28T00:00:00Z"}, "from"),
        ({"to": "0001-01-01"}, "to"),  # the default 7 days before it leave the calendar
        ({"to": "0001-01-05T00:00:00Z"}, "to"),
        ({"from": LATE}, "from"),
        ({"from": "2025-01-01", "to": LATE}, "to"),
        ({"from": EARLY, "to": "0001-01-05"}, "from"),
        # An unencoded '+' arrives as a space; repaired, it still overflows.
        ({"from": "0001-01-01T00:00:00 12:00", "to": "0001-01-05"}, "from"),
    ],
)
def test_stats_refuses_windows_outside_the_calendar(reviewer_client, params, field):
    assert_names(reviewer_client.get("/api/v1/stats", params), field)


@pytest.mark.parametrize(
    ("interval", "first", "last", "count"),
    [
        ("hour", datetime(9999, 12, 25, tzinfo=UTC), datetime(9999, 12, 31, 23, tzinfo=UTC), 168),
        ("day", datetime(9999, 12, 25, tzinfo=UTC), datetime(9999, 12, 31, tzinfo=UTC), 7),
        # 9999-12-25 is a Saturday, 9999-12-31 a Friday: weeks start on Monday.
        ("week", datetime(9999, 12, 20, tzinfo=UTC), datetime(9999, 12, 27, tzinfo=UTC), 2),
    ],
)
def test_stats_series_at_the_end_of_the_calendar(reviewer_client, interval, first, last, count):
    params = {"from": "9999-12-25", "to": "9999-12-31T23:59:59.999999Z", "interval": interval}
    response = reviewer_client.get("/api/v1/stats", params)
    assert response.status_code == 200, response.content
    starts = [datetime.fromisoformat(row["bucket"]) for row in response.json()["series"]]
    assert (starts[0], starts[-1], len(starts)) == (first, last, count)
    # The start of the calendar: 0001-01-01 is a Monday.
    params = {"from": "0001-01-01", "to": "0001-01-08T00:00:01Z", "interval": interval}
    response = reviewer_client.get("/api/v1/stats", params)
    assert response.status_code == 200, response.content
    assert response.json()["series"][0]["bucket"] == "0001-01-01T00:00:00+00:00"


@pytest.mark.parametrize(
    "query",
    [
        f"created_from={LATE}",
        f"created_to={EARLY}",
        f"created_at__gte={LATE}",  # a plain lookup on the column, not the time filter
        f"created_at__lt={EARLY}",
    ],
)
def test_admin_execution_dates_outside_utc_are_an_invalid_lookup(admin_client, query):
    query = query.replace("+", "%2B")
    response = admin_client.get(f"{EXECUTIONS_ADMIN}?{query}")
    assert response.status_code == 302
    assert response["Location"].endswith("?e=1")
    export = admin_client.get(
        reverse("admin:executions_execution_export", args=["jsonl"]) + "?" + query
    )
    assert export.status_code == 302 and export["Location"] == EXECUTIONS_ADMIN
    assert any("Cannot export" in str(m) for m in get_messages(export.wsgi_request))


def test_admin_time_filter_up_to_the_last_day_of_the_calendar(admin_client, one_execution):
    response = admin_client.get(f"{EXECUTIONS_ADMIN}?created_from=0001-01-01&created_to=9999-12-31")
    assert response.status_code == 200
    assert [e.pk for e in response.context["cl"].result_list] == [one_execution.pk]
    export = admin_client.get(
        reverse("admin:executions_execution_export", args=["jsonl"]) + "?created_to=9999-12-31"
    )
    assert export.status_code == 200
    assert str(one_execution.pk) in b"".join(export.streaming_content).decode()


@pytest.mark.parametrize(
    "query",
    [
        "created_from=2000-01-01T00:00:00%2B16:00",
        "created_to=2999-01-01T00:00:00-20:00",
    ],
)
def test_admin_dates_with_offsets_postgresql_cannot_store(admin_client, one_execution, query):
    response = admin_client.get(f"{EXECUTIONS_ADMIN}?{query}")
    assert response.status_code == 200
    assert [e.pk for e in response.context["cl"].result_list] == [one_execution.pk]
    # The column's own lookup (Django's) is refused as an invalid filter, never a 500.
    own = admin_client.get(f"{EXECUTIONS_ADMIN}?created_at__gte=2000-01-01T00:00:00%2B16:00")
    assert own.status_code == 302 and own["Location"].endswith("?e=1")


def test_admin_audit_dates_outside_utc_are_an_invalid_lookup(admin_client):
    response = admin_client.get(f"{AUDIT_ADMIN}?occurred_from={LATE}")
    assert response.status_code == 302 and response["Location"].endswith("?e=1")
    export = admin_client.get(
        reverse("admin:registry_auditevent_export", args=["csv"]) + f"?occurred_from={LATE}"
    )
    assert export.status_code == 302 and export["Location"] == AUDIT_ADMIN


# 2. Malformed cursors.


BAD_CURSORS = [
    "bogus",
    "cD0xMjM=",  # p=123
    "cj0xJnA9Ym9ndXM=",  # r=1&p=bogus
    cursor(o="-1"),
    cursor(o="x"),
    cursor(p="2025-01-01 00:00:00"),  # no UTC offset: not a position this API hands out
    cursor(p="2025-01-01 00:00:00 00:00"),  # a '+' not encoded
    cursor(p=LATE),
    cursor(p="\x00"),
    "%%%",
]


@pytest.mark.parametrize("value", BAD_CURSORS)
def test_bad_cursors_are_400(reviewer_client, tool, value):
    for url in ("/api/v1/executions", f"/api/v1/executions/tool/{tool.pk}", "/api/v1/audit"):
        error = assert_names(reviewer_client.get(url, {"cursor": value}), "cursor")
        assert "next or previous" in error["message"]


def test_issued_cursors_walk_both_ways_edited_ones_are_refused(
    reviewer_client, tool, reviewer_user
):
    made = [
        Execution.objects.create(
            tool=tool, tool_name=tool.name, tool_type="http", principal=reviewer_user
        )
        for _ in range(5)
    ]
    seen, url = [], "/api/v1/executions?page_size=2"
    while url:
        body = reviewer_client.get(url).json()
        seen += [row["id"] for row in body["results"]]
        previous, url = body["previous"], body["next"]
    assert sorted(seen) == sorted(str(e.pk) for e in made) and len(seen) == 5
    back = reviewer_client.get(previous)
    assert back.status_code == 200 and len(back.json()["results"]) == 2
    # The same link with its position edited is refused.
    issued = parse_qs(urlsplit(previous).query)["cursor"][0]
    tokens = parse_qs(base64.b64decode(issued).decode())
    assert set(tokens) >= {"p", "r"}
    edited = cursor(r="1", p=tokens["p"][0].replace("-", "/"))
    assert_names(reviewer_client.get("/api/v1/executions", {"cursor": edited}), "cursor")
    # A position with another offset than UTC is still a valid value of the field.
    shifted = cursor(p="2999-01-01 02:00:00+02:00")
    response = reviewer_client.get("/api/v1/executions", {"cursor": shifted})
    assert response.status_code == 200 and len(response.json()["results"]) == 5


def test_audit_cursor_with_a_valid_position(reviewer_client):
    AuditEvent.objects.create(action="tool.created", actor_name="system")
    everything = AuditEvent.objects.count()
    for position, status, rows in (
        ("2999-01-01 00:00:00+00:00", 200, everything),
        ("2999-01-01T00:00:00Z", 200, everything),
        ("2000-01-01 00:00:00+00:00", 200, 0),
        ("2999-01-01", 400, None),
    ):
        response = reviewer_client.get("/api/v1/audit", {"cursor": cursor(p=position)})
        assert response.status_code == status, response.content
        if rows is not None:
            assert len(response.json()["results"]) == rows, position


def test_cursor_page_size_takes_ascii_digits_in_range(reviewer_client):
    for url in ("/api/v1/executions", "/api/v1/audit"):
        # 3000 digits: far past any integer, within the 4094-byte request line (414 past it).
        for size in ("\u0661\u0660", HUGE, "9" * 3000, "0", "201", "x"):
            assert_names(reviewer_client.get(url, {"page_size": size}), "page_size")
        assert reviewer_client.get(url, {"page_size": "200"}).status_code == 200


# 3. Integers too large, and non-ASCII digits.


@pytest.mark.parametrize("value", [HUGE, str(MAX_DB_INTEGER + 1), ARABIC_ONE, "0"])
def test_audit_actor_id_must_be_an_id(reviewer_client, value):
    for url in ("/api/v1/audit", "/api/v1/audit/export"):
        for bad in (value, "-1", "abc"):
            error = assert_names(reviewer_client.get(url, {"actor_id": bad}), "actor_id")
            assert bad in error["message"]
    AuditEvent.objects.create(action="tool.created", actor_name="system")
    response = reviewer_client.get("/api/v1/audit", {"actor_id": str(MAX_DB_INTEGER)})
    assert response.status_code == 200, response.content
    assert response.json()["results"] == []


@pytest.mark.parametrize("value", [HUGE, str(MAX_DB_INTEGER + 1), ARABIC_ONE])
def test_permissions_role_id_must_be_an_id(staff_client, platform_admin_role, value):
    for bad in (value, "abc", "0"):
        assert_names(staff_client.get("/api/v1/permissions", {"role_id": bad}), "role_id")
    role = role_services.role_create(actor=None, name="robust-role")
    grant_services.grant_create(actor=None, role=role, action="read")
    response = staff_client.get("/api/v1/permissions", {"role_id": str(role.pk)})
    assert response.status_code == 200
    assert {row["role_id"] for row in response.json()["results"]} == {role.pk}
    top = staff_client.get("/api/v1/permissions", {"role_id": str(MAX_DB_INTEGER)})
    assert top.status_code == 200 and top.json()["results"] == []


def test_execution_role_filter_reads_non_ascii_digits_as_a_name(
    reviewer_client, tool, reviewer_user
):
    role = role_services.role_create(actor=None, name="robust-callers")
    Execution.objects.create(
        tool=tool, tool_name=tool.name, tool_type="http", principal=reviewer_user, role=role
    )
    for value in (str(role.pk), role.name):
        response = reviewer_client.get("/api/v1/executions", {"role": value})
        assert len(response.json()["results"]) == 1, value
    digits = "".join(chr(0x0660 + int(d)) for d in str(role.pk))
    for value in (digits, HUGE):
        response = reviewer_client.get("/api/v1/executions", {"role": value})
        assert response.status_code == 200 and response.json()["results"] == [], value


def test_admin_execution_role_filter_with_a_huge_or_non_ascii_id(admin_client, one_execution):
    role = role_services.role_create(actor=None, name="robust-admin-role")
    one_execution.role = role
    one_execution.save(update_fields=["role"])
    shown = admin_client.get(f"{EXECUTIONS_ADMIN}?role={role.pk}")
    assert [e.pk for e in shown.context["cl"].result_list] == [one_execution.pk]
    digits = "".join(chr(0x0660 + int(d)) for d in str(role.pk))
    for value in (HUGE, digits):
        response = admin_client.get(EXECUTIONS_ADMIN, {"role": value})
        assert response.status_code == 200, value
        assert list(response.context["cl"].result_list) == [], value  # no role of that name
        export = admin_client.get(
            reverse("admin:executions_execution_export", args=["csv"]), {"role": value}
        )
        assert export.status_code == 200
        rows = b"".join(export.streaming_content).decode().splitlines()
        assert len(rows) == 1  # the header only


@pytest.mark.parametrize(
    "query",
    [f"actor_id={HUGE}", f"actor__exact={HUGE}", f"actor__id={HUGE}", f"actor_id__in=1,{HUGE}"],
)
def test_admin_audit_actor_id_beyond_the_integer_range_is_an_invalid_lookup(
    admin_client, reviewer_user, query
):
    response = admin_client.get(f"{AUDIT_ADMIN}?{query}")
    assert response.status_code == 302 and response["Location"].endswith("?e=1")
    export_url = reverse("admin:registry_auditevent_export", args=["jsonl"])
    export = admin_client.get(f"{export_url}?{query}")
    assert export.status_code == 302 and export["Location"] == AUDIT_ADMIN
    messages = [str(m) for m in get_messages(export.wsgi_request)]
    assert any("Cannot export" in m and HUGE in m for m in messages), messages
    # An id in range still filters.
    mine = AuditEvent.objects.create(
        action="tool.created", actor=reviewer_user, actor_name=reviewer_user.username
    )
    AuditEvent.objects.create(action="tool.created", actor_name="system")
    response = admin_client.get(f"{AUDIT_ADMIN}?actor_id={reviewer_user.pk}")
    assert response.status_code == 200
    assert [e.pk for e in response.context["cl"].result_list] == [mine.pk]


def test_admin_audit_event_with_non_ascii_id_is_not_found(admin_client):
    event = AuditEvent.objects.create(action="tool.created", actor_name="system")
    digits = "".join(chr(0x0660 + int(d)) for d in str(event.pk))
    ok = admin_client.get(reverse("admin:registry_auditevent_change", args=[event.pk]))
    assert ok.status_code == 200
    response = admin_client.get(reverse("admin:registry_auditevent_change", args=[digits]))
    assert response.status_code == 302  # the admin's "does not exist" redirect to its index
    search = admin_client.get(AUDIT_ADMIN, {"q": digits})
    assert search.status_code == 200 and list(search.context["cl"].result_list) == []
    found = admin_client.get(AUDIT_ADMIN, {"q": str(event.pk)})
    assert [e.pk for e in found.context["cl"].result_list] == [event.pk]
    huge = admin_client.get(AUDIT_ADMIN, {"q": str(MAX_DB_INTEGER)})
    assert huge.status_code == 200 and list(huge.context["cl"].result_list) == []


@pytest.mark.parametrize("changelist", [EXECUTIONS_ADMIN, AUDIT_ADMIN])
def test_admin_page_number_beyond_the_integer_range(admin_client, one_execution, changelist):
    for page in (HUGE, str(MAX_DB_INTEGER)):
        response = admin_client.get(changelist, {"p": page})
        assert response.status_code in (200, 302), page
        if response.status_code == 302:  # the admin's answer to a page that does not exist
            assert response["Location"].endswith("?e=1")
        else:
            assert list(response.context["cl"].result_list) == []
    assert len(admin_client.get(changelist, {"p": "1"}).context["cl"].result_list) >= 1


# 4. The admin's test run with an id that is not a UUID.


def test_admin_test_run_of_a_tool_is_200(tool, staff_user):
    client = Client()
    client.force_login(staff_user)
    good = reverse("admin:registry_tool_test_run", args=[tool.pk])
    assert client.get(good).status_code == 200


@pytest.mark.parametrize(
    "object_id", ["not-a-uuid", "{tool}/extra", "6f1c8a2e-0000-4000-8000-000000000004", HUGE]
)
def test_admin_test_run_with_a_bad_id_is_404(tool, staff_user, object_id):
    client = Client()
    client.force_login(staff_user)
    object_id = object_id.format(tool=tool.pk)
    response = client.get(f"/admin/registry/tool/{object_id}/test-run/")
    assert response.status_code == 404, object_id


# Unknown and repeated filters.


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("/api/v1/executions?tool_name=x", "tool_name"),
        ("/api/v1/executions?statuses=failed", "statuses"),
        ("/api/v1/executions/export?limit=5", "limit"),
        ("/api/v1/tools?type=python", "type"),
        ("/api/v1/audit?user=bob", "user"),
        ("/api/v1/audit/export?since=2026-01-01", "since"),
        ("/api/v1/approvals?state=pending", "state"),
    ],
)
def test_unknown_filters_are_refused_not_ignored(reviewer_client, tool, url, field):
    # Ignored, a misspelled filter would answer with everything, as if it all matched.
    error = assert_names(reviewer_client.get(url), field)
    assert "this endpoint takes:" in error["message"]


def test_grants_refuse_unknown_filters(staff_client, platform_admin_role):
    error = assert_names(staff_client.get("/api/v1/permissions?role=1"), "role")
    assert "role_id" in error["message"]


def test_a_filter_given_twice_is_refused(reviewer_client, tool):
    response = reviewer_client.get("/api/v1/executions?status=succeeded&status=denied")
    error = assert_names(response, "status")
    assert "comma-separated" in error["message"]
    assert reviewer_client.get("/api/v1/executions?status=succeeded,denied").status_code == 200


def test_executions_filter_by_tool_name(reviewer_client, tool, one_execution):
    other = tool_services.tool_create(actor=None, name="other_tool", type="http")
    Execution.objects.create(
        tool=other, tool_name=other.name, tool_type="http", principal=one_execution.principal
    )
    listed = reviewer_client.get("/api/v1/executions?tool=robust_tool").json()["results"]
    assert [e["id"] for e in listed] == [str(one_execution.pk)]
    assert reviewer_client.get("/api/v1/executions?tool=nope").json()["results"] == []
    paged = reviewer_client.get("/api/v1/executions?tool=robust_tool&page_size=1&cursor=")
    assert paged.status_code == 200


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/api/v1/tools?search=%00", "search"),
        ("/api/v1/audit?action=%00", "action"),
        ("/api/v1/executions?role=%00", "role"),
        ("/api/v1/audit/export?action=a%00b", "action"),
        ("/api/v1/executions/export?role=%00", "role"),
        ("/api/v1/tools?%00=1", "\\0"),
        ("/api/v1/registry/by-role-name/%00", "path"),
    ],
)
def test_a_nul_character_is_a_400_naming_where(staff_client, path, field):
    """PostgreSQL refuses NUL in text: it is refused before any view runs, not a 500."""
    response = staff_client.get(path)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "validation_error" and error["details"][0]["field"] == field


def test_a_nul_character_in_an_admin_search_is_a_400(admin_client, tool):
    for url in (reverse("admin:registry_tool_changelist") + "?q=%00", AUDIT_ADMIN + "?q=x%00"):
        response = admin_client.get(url)
        assert response.status_code == 400 and b"NUL" in response.content


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/agents?owner=alice",
        "/api/v1/agents?is_active=false",
        "/api/v1/roles?name=x",
        "/api/v1/mcp-servers?transport=sse",
        "/api/v1/stats?foo=1",
        "/api/v1/registry/me?foo=1",
        "/api/v1/rate-limits?tool=x",
        "/api/v1/audit/head?x=1",
    ],
)
def test_endpoints_without_such_a_filter_refuse_it_instead_of_answering_everything(
    staff_client, path
):
    response = staff_client.get(path)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert "Unknown query parameter" in error["details"][0]["message"]


def test_writes_take_no_query_parameters(staff_client):
    response = staff_client.post("/api/v1/roles?page=2", {"name": "r-q"}, format="json")
    assert response.status_code == 400 and "it takes none" in response.content.decode()
    created = staff_client.post(
        "/api/v1/tools?dry_run=1", {"name": "t", "type": "http"}, format="json"
    )
    assert created.status_code == 400 and "dry_run" in created.content.decode()


def test_known_and_paging_parameters_still_work(staff_client):
    assert staff_client.get("/api/v1/agents?page=1&page_size=5").status_code == 200
    assert staff_client.get("/api/v1/registry/me?format=openai").status_code == 200
    assert staff_client.get("/api/v1/stats?group_by=agent").status_code == 200
    twice = staff_client.get("/api/v1/registry/me?format=raw&format=openai")
    assert twice.status_code == 400 and "give it once." in twice.content.decode()


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/api/v1/executions?page=2", "page"),
        ("/api/v1/audit?page=2", "page"),
        ("/api/v1/tools?cursor=abc", "cursor"),
        ("/api/v1/agents?cursor=abc", "cursor"),
    ],
)
def test_the_other_paging_style_is_refused_not_ignored(staff_client, path, name):
    """Ignored, ?page=2 on a cursor-paged list answered the first page forever."""
    response = staff_client.get(path)
    assert response.status_code == 400, response.content
    assert name in response.json()["error"]["details"][0]["field"]
