"""The admin given what a form or a query string can hold: never a server error, and a
filter either applies (or shows no rows, with a message) or is refused, never ignored.

Also: the execution filters match the names the list shows, and a tool's or an agent's
audit trail includes the events of its parts.
"""

from __future__ import annotations

import html
import json
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django import forms
from django.contrib import admin
from django.contrib.auth.models import Group
from django.db import connection, models
from django.test import Client, RequestFactory
from django.urls import reverse

from executions.models import Execution
from registry.admin.forms import MAX_JSON_DEPTH, AdminJSONField
from registry.admin.mixins import GuardedChangeListMixin, KeyCheckedAutocompleteMixin
from registry.models import AuditEvent, RateLimitRule, Tool
from registry.services import agents as agent_services
from registry.services import grants as grant_services
from registry.services import limits as limit_services
from registry.services import roles as role_services
from registry.services import tokens as token_services
from registry.services import tools as tool_services
from tests.factories import make_user
from tests.registry.test_admin import change_form_data

pytestmark = pytest.mark.django_db

DEEP = "[" * 3000 + "]" * 3000  # Python's json gives up (RecursionError) long before this
TOO_DEEP = f"Nested more than {MAX_JSON_DEPTH} levels deep."
RATE_LIMITS = reverse("admin:registry_ratelimitrule_changelist")
TOOLS = reverse("admin:registry_tool_changelist")
EXECUTIONS = reverse("admin:executions_execution_changelist")
AUDIT = reverse("admin:registry_auditevent_changelist")


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.fixture(autouse=True)
def _single_sign_on_on(settings):
    """Its admin pages exist only with single sign-on configured: checked with the rest."""
    settings.TOOLHUB_SSO_ISSUER = "https://idp.example.com"
    settings.TOOLHUB_SSO_CLIENT_ID = "toolhub"
    settings.TOOLHUB_SSO_CLIENT_SECRET = "robustness-secret"


@pytest.fixture
def admin_client(superuser) -> Client:
    client = Client()
    client.force_login(superuser)
    return client


@pytest.fixture
def tool(db):
    tool = tool_services.tool_create(actor=None, name="robust_fx", type="http")
    tool_services.parameter_create(actor=None, tool=tool, name="base", required=True)
    tool_services.config_set(
        actor=None, tool=tool, config_key="base_url", config_value="https://fx.example"
    )
    return tool


def shown(response) -> list:
    return list(response.context["cl"].result_list)


# 1. Deeply nested JSON in admin forms.


@pytest.mark.parametrize(
    "field",
    [
        "tool_metadata",
        "approval_condition",
        "parameters-0-json_schema",
        "parameters-0-default_json",
    ],
)
@pytest.mark.parametrize("text", [DEEP, nested(MAX_JSON_DEPTH + 1)], ids=["3000", "limit+1"])
def test_deeply_nested_json_on_the_tool_page_is_a_form_error(admin_client, tool, field, text):
    before = (tool.tool_metadata, tool.approval_condition)
    url = reverse("admin:registry_tool_change", args=[tool.pk])
    response = admin_client.post(url, change_form_data(tool, **{field: text}))
    assert response.status_code == 200
    page = response.content.decode()
    assert TOO_DEEP in page
    tool.refresh_from_db()
    assert (tool.tool_metadata, tool.approval_condition) == before
    assert tool.parameters.get().json_schema == {}


def test_json_nested_up_to_the_limit_and_no_deeper(admin_client, tool):
    url = reverse("admin:registry_tool_change", args=[tool.pk])
    too_deep = '{"deep": ' + nested(MAX_JSON_DEPTH) + "}"  # the object is level 1
    response = admin_client.post(url, change_form_data(tool, tool_metadata=too_deep))
    assert response.status_code == 200 and TOO_DEEP in response.content.decode()
    text = '{"deep": ' + nested(MAX_JSON_DEPTH - 1) + "}"
    response = admin_client.post(url, change_form_data(tool, tool_metadata=text))
    assert response.status_code == 302
    tool.refresh_from_db()
    assert tool.tool_metadata == json.loads(text)


def test_deeply_nested_json_when_adding_a_tool_is_a_form_error(admin_client):
    data = {
        "name": "deep_tool",
        "type": "python",
        "version": "1.0.0",
        "tool_metadata": DEEP,
        "timeout_seconds": 30,
        "max_retries": 0,
        "cache_ttl_seconds": 0,
        "max_response_bytes": 1048576,
        "approval_condition": DEEP,
        "approval_ttl_seconds": 86400,
        **{
            f"{p}-{n}": 0
            for p in ("parameters", "configs", "grants", "rate_limits")
            for n in ("TOTAL_FORMS", "INITIAL_FORMS")
        },
    }
    response = admin_client.post(reverse("admin:registry_tool_add"), data)
    assert response.status_code == 200
    assert response.content.decode().count(TOO_DEEP) >= 2
    assert not Tool.objects.filter(name="deep_tool").exists()


@pytest.mark.parametrize("field", ["args", "env", "tools_allowed", "tools_denied"])
def test_deeply_nested_json_on_the_mcp_server_page_is_a_form_error(admin_client, field):
    data = {
        "name": "deep-mcp",
        "transport": "http",
        "url": "https://mcp.example/mcp",
        "args": "[]",
        "env": "{}",
        "tools_allowed": "[]",
        "tools_denied": "[]",
        "timeout_seconds": 30,
        "is_enabled": "on",
        field: DEEP,
    }
    response = admin_client.post(reverse("admin:registry_mcpserver_add"), data)
    assert response.status_code == 200
    assert TOO_DEEP in response.content.decode()


def test_every_json_field_of_every_admin_form_refuses_deep_nesting(superuser):
    request = RequestFactory().get("/")
    request.user = superuser
    found = set()
    for model, model_admin in admin.site._registry.items():
        forms_of_admin = [model_admin.get_form(request, None)]
        for inline in model_admin.get_inline_instances(request, None):
            forms_of_admin.append(inline.get_formset(request, None).form)
        for form_class in forms_of_admin:
            for name, field in form_class.base_fields.items():
                if isinstance(field, forms.JSONField):
                    assert isinstance(field, AdminJSONField), (model, name)
                    found.add(name)
    # Tool, tool parameter (inline) and MCP server forms.
    assert {"tool_metadata", "approval_condition", "json_schema", "args", "env"} <= found
    with pytest.raises(forms.ValidationError, match="levels deep"):
        AdminJSONField().clean(DEEP)


# 2. The rate limit's tool box with a value that is not a tool id.


def rule_data(**overrides) -> dict:
    data = {
        "tool": "",
        "scope": "agent",
        "max_requests": 5,
        "time_window_seconds": 60,
        "is_active": "on",
        "description": "",
    }
    return {**data, **overrides}


@pytest.mark.parametrize("value", ["xyz", "1", "not-a-uuid"])
def test_adding_a_rate_limit_with_a_bad_tool_id_in_the_link(admin_client, value):
    response = admin_client.get(reverse("admin:registry_ratelimitrule_add"), {"tool": value})
    assert response.status_code == 200
    assert f'<option value="{value}"' not in response.content.decode()


def test_posting_a_rate_limit_with_a_bad_tool_id_is_a_form_error(admin_client, tool):
    url = reverse("admin:registry_ratelimitrule_add")
    response = admin_client.post(url, rule_data(tool="xyz"))
    assert response.status_code == 200
    assert "“xyz” is not a valid UUID." in response.content.decode()
    assert not RateLimitRule.objects.exists()
    # A real tool id still works, and is shown when the form comes back.
    page = admin_client.get(url, {"tool": str(tool.pk)}).content.decode()
    assert f'<option value="{tool.pk}" selected>robust_fx</option>' in page
    assert admin_client.post(url, rule_data(tool=str(tool.pk))).status_code == 302
    assert RateLimitRule.objects.get().tool == tool


def test_autocomplete_boxes_never_look_up_a_value_that_is_not_a_key():
    for model_admin in admin.site._registry.values():
        if model_admin.autocomplete_fields:
            assert isinstance(model_admin, KeyCheckedAutocompleteMixin), model_admin


# 3. Date lookups the database would be asked to compute with an impossible date.


def changelists():
    for model, model_admin in admin.site._registry.items():
        info = model._meta.app_label, model._meta.model_name
        yield model, model_admin, reverse("admin:{}_{}_changelist".format(*info))


@pytest.fixture
def some_rows(tool, superuser):
    agent = agent_services.agent_create(actor=None, name="row-agent", owner=superuser)
    token_services.token_issue(actor=None, user=agent.user, name="t")
    limit_services.rate_limit_create(
        actor=None, tool=tool, scope="agent", max_requests=1, time_window_seconds=60
    )
    Execution.objects.create(
        tool=tool,
        tool_name=tool.name,
        principal=agent.user,
        principal_name=agent.name,
        agent=agent,
        status="succeeded",
    )


@pytest.mark.parametrize("year", ["0", "10000", "99999999999999999999"])
def test_impossible_dates_in_any_changelist_are_refused(admin_client, some_rows, year):
    checked = 0
    for model, _model_admin, url in changelists():
        for field in model._meta.get_fields():
            if isinstance(field, models.DateField) and field.concrete:
                for lookup in (f"year={year}", "month=13", "day=x", "day=32"):
                    response = admin_client.get(f"{url}?{field.name}__{lookup}")
                    assert response.status_code in (200, 302), (url, field.name, lookup)
                    if response.status_code == 200:  # month 13 or day 32: no such date
                        assert shown(response) == [], (url, field.name, lookup)
                checked += 1
    assert checked >= 10


@pytest.fixture
def postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's regular expressions")


def test_a_regular_expression_the_database_refuses_is_an_invalid_filter(
    admin_client, some_rows, postgresql_only
):
    for url, field in ((TOOLS, "name"), (RATE_LIMITS, "description"), (EXECUTIONS, "tool_name")):
        response = admin_client.get(f"{url}?{field}__regex=(")
        assert response.status_code == 302 and response["Location"].endswith("?e=1"), url
    # The database is still usable afterwards, and a valid expression filters.
    assert [t.name for t in shown(admin_client.get(f"{TOOLS}?name__regex=^robust"))] == [
        "robust_fx"
    ]


# 4. Filters that would be ignored, showing every row.


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


@pytest.mark.parametrize(
    ("url", "query"),
    [
        (RATE_LIMITS, "tool__id=not-a-uuid"),
        (RATE_LIMITS, "tool__isempty=maybe"),
        (TOOLS, "status=nonsense"),  # tools have no status
        (EXECUTIONS, "tool__id__exact=xyz"),
        (reverse("admin:registry_apitoken_changelist"), "status=nonsense"),
    ],
)
def test_an_invalid_filter_shows_no_rows_and_says_why(admin_client, some_rows, url, query):
    assert shown(admin_client.get(url))  # rows exist
    response = admin_client.get(f"{url}?{query}", follow=True)
    assert response.redirect_chain == [(f"{url}?e=1", 302)]
    assert shown(response) == []
    assert any("no rows are shown" in m for m in messages_of(response)), messages_of(response)


def test_a_filter_with_nothing_to_choose_from_is_not_ignored(admin_client, some_rows):
    assert not Group.objects.exists()
    agents = reverse("admin:registry_agent_changelist")
    assert shown(admin_client.get(agents))
    # No roles: Django's role filter has no choices, and would drop the parameter.
    response = admin_client.get(f"{agents}?user__groups__id__exact=1", follow=True)
    assert shown(response) == []
    assert any("user__groups__id__exact" in m for m in messages_of(response))


def test_a_category_no_tool_has_shows_no_tools(admin_client, tool):
    assert shown(admin_client.get(TOOLS))
    response = admin_client.get(TOOLS, {"category": "no-such-category"})
    assert response.status_code == 200 and shown(response) == []
    tool_services.tool_update(actor=None, tool=tool, data={"tool_metadata": {"category": "fx"}})
    assert [t.pk for t in shown(admin_client.get(TOOLS, {"category": "fx"}))] == [tool.pk]


def test_every_changelist_is_guarded():
    for _model, model_admin, _url in changelists():
        assert isinstance(model_admin, GuardedChangeListMixin), model_admin


# 5. Execution filters match the names the list shows.


@pytest.fixture
def calls(tool, superuser):
    callers = role_services.role_create(actor=None, name="callers")
    other = role_services.role_create(actor=None, name="others")
    agent = agent_services.agent_create(
        actor=None, name="fx-bot", owner=superuser, role_ids=[callers.pk]
    )
    person = make_user("hank")
    gone = make_user("gone-gail")

    def call(principal, name, *, role=None, roles_used=()):
        return Execution.objects.create(
            tool=tool,
            tool_name=tool.name,
            agent=getattr(principal, "agent", None),
            principal=principal,
            principal_name=name,
            role=role,
            roles_used=list(roles_used),
            status="succeeded",
        )

    made = {
        # As the pipeline records them: an agent's calls carry the agent's name.
        "agent_all_roles": call(agent.user, "fx-bot", roles_used=["callers"]),
        "agent_narrowed": call(agent.user, "fx-bot", role=callers, roles_used=["callers"]),
        "person": call(person, "hank", roles_used=["others"]),
        "gone": call(gone, "gone-gail", roles_used=["callers", "others"]),
    }
    gone.delete()  # the call keeps the name; its principal is now empty
    return {"calls": made, "callers": callers, "others": other, "agent": agent}


def shown_calls(admin_client, calls, **params) -> set[str]:
    response = admin_client.get(EXECUTIONS, params)
    assert response.status_code == 200, params
    names = {e.pk: key for key, e in calls["calls"].items()}
    return {names[e.pk] for e in shown(response)}


def test_the_principal_filter_matches_the_principal_column(admin_client, calls):
    assert shown_calls(admin_client, calls, principal="fx-bot") == {
        "agent_all_roles",
        "agent_narrowed",
    }
    assert shown_calls(admin_client, calls, principal="hank") == {"person"}
    assert shown_calls(admin_client, calls, principal="gone-gail") == {"gone"}
    # The agent's user name is not what the list shows.
    assert shown_calls(admin_client, calls, principal="agent.fx-bot") == set()
    page = admin_client.get(EXECUTIONS, {"principal": "fx-bot"}).content.decode()
    assert page.count('<td class="field-principal_name">fx-bot</td>') == 2


def test_the_role_filter_matches_the_apis_role_filter(admin_client, calls, staff_client):
    """Calls narrowed to the role, by name or id, as GET /api/v1/executions?role= finds them
    (on the same index); calls made with all the caller's roles are found by principal."""
    callers, others = calls["callers"], calls["others"]
    assert shown_calls(admin_client, calls, role="callers") == {"agent_narrowed"}
    assert shown_calls(admin_client, calls, role=str(callers.pk)) == {"agent_narrowed"}
    assert shown_calls(admin_client, calls, role="others") == set()
    assert shown_calls(admin_client, calls, role=str(others.pk)) == set()
    api = staff_client.get("/api/v1/executions", {"role": "callers"}).json()["results"]
    assert {e["id"] for e in api} == {str(calls["calls"]["agent_narrowed"].pk)}
    role_services.role_update(actor=None, role=callers, data={"name": "callers-2"})
    assert shown_calls(admin_client, calls, role="callers-2") == {"agent_narrowed"}


# 6. Audit trails of a tool and an agent include their parts' events.


def audit_links(page: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(rf'href="({AUDIT}\?[^"]*)"', page)]


def shown_events(admin_client, url) -> set[int]:
    response = admin_client.get(url)
    assert response.status_code == 200, url
    return {e.pk for e in shown(response)}


def test_the_audit_trail_of_a_tool_includes_its_parts(admin_client, tool):
    role = role_services.role_create(actor=None, name="fx-users")
    grant_services.grant_create(actor=None, role=role, action="execute", tool=tool)
    rule = limit_services.rate_limit_create(
        actor=None, tool=tool, scope="agent", max_requests=1, time_window_seconds=60
    )
    limit_services.rate_limit_update(actor=None, rule=rule, data={"max_requests": 2})
    old, _ = tool_services.config_set(actor=None, tool=tool, config_key="retired", config_value=1)
    tool_services.config_delete(actor=None, config=old)
    other = tool_services.tool_create(actor=None, name="other_tool", type="http")
    tool_services.config_set(
        actor=None, tool=other, config_key="base_url", config_value="https://other.example"
    )
    kinds = {
        "registry.tool",
        "registry.toolparameter",
        "registry.toolconfig",
        "registry.toolgrant",
        "registry.ratelimitrule",
    }
    expected = set()
    for event in AuditEvent.objects.filter(target_type__in=kinds):
        snapshot = event.after or event.before or {}
        if event.target_id == str(tool.pk) or snapshot.get("tool_id") == str(tool.pk):
            expected.add(event.pk)
    actions = set(AuditEvent.objects.filter(pk__in=expected).values_list("action", flat=True))
    assert {"grant.created", "rate_limit.updated", "tool_config.deleted"} <= actions

    page = admin_client.get(reverse("admin:registry_tool_change", args=[tool.pk]))
    links = audit_links(page.content.decode())
    assert len(links) == 2  # the record's "Audit trail" and the activity links
    for link in links:
        assert shown_events(admin_client, link) == expected
        assert parse_qs(urlsplit(link).query) == {"object": [f"registry.tool:{tool.pk}"]}


def test_the_audit_trail_of_an_agent_includes_its_tokens(admin_client, superuser):
    agent = agent_services.agent_create(actor=None, name="trail-bot", owner=superuser)
    token, _ = token_services.token_issue(actor=None, user=agent.user, name="t1")
    token_services.token_revoke(actor=None, token=token)
    agent_services.agent_update(actor=None, agent=agent, data={"description": "changed"})
    other = agent_services.agent_create(actor=None, name="other-bot", owner=superuser)
    token_services.token_issue(actor=None, user=other.user, name="t2")
    expected = set(
        AuditEvent.objects.filter(target_type="registry.agent", target_id=str(agent.pk))
        .values_list("pk", flat=True)
        .union(
            AuditEvent.objects.filter(
                target_type="registry.apitoken", target_id=str(token.pk)
            ).values_list("pk", flat=True)
        )
    )
    assert len(expected) == 4  # created, updated, token issued and revoked

    page = admin_client.get(reverse("admin:registry_agent_change", args=[agent.pk]))
    links = audit_links(page.content.decode())
    assert links
    for link in links:
        assert shown_events(admin_client, link) == expected


@pytest.mark.parametrize(
    "value", ["registry.tool:not-a-uuid", "registry.agent:1", "nonsense", "registry.tool:"]
)
def test_an_audit_trail_of_no_object_is_refused(admin_client, tool, value):
    response = admin_client.get(AUDIT, {"object": value}, follow=True)
    assert response.redirect_chain == [(f"{AUDIT}?e=1", 302)]
    assert shown(response) == []
