"""Single sign-on against a real OpenID Connect provider.

The provider is oidc-provider (OpenID certified, tests/node/oidc_provider.mjs) on
127.0.0.1, started once for this file; ToolHub is Django's live server. Each sign-in is
driven over HTTP as a browser would: the admin's login page, its "Sign in with" button,
the provider's login and consent forms, the callback. The provider's accounts live in a
JSON file it reads at every use, so a test changes a person's groups between sign-ins.

What ToolHub must refuse is made by the provider itself: for one token response it
hands ToolHub an ID token changed in one way (another audience, issuer or nonce,
expired, claims altered without re-signing, unsigned, signed with a key it does not
publish, MACed with the client secret), next to the control (re-signed unchanged).

Without node the tests skip, except in CI (CI=true), where they must run.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from pathlib import Path
from urllib.parse import urljoin

import httpx
import pytest
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured

from registry import authorization
from registry.models import AuditEvent, SsoGroupMapping
from registry.services import sso as sso_services
from registry.services.standard_roles import ensure_standard_roles
from registry.sso import claims as sso_claims
from tests.conftest import make_role
from tests.factories import make_user
from tests.html_forms import form_of, forms_of
from tests.node_packages import NODE_DIR, require_node
from tests.test_settings_env import run_settings
from tests.workers import wait_for
from toolhub.exceptions import PermissionDenied
from toolhub.settings.sso import _group_roles

CLIENT_ID = "toolhub"
# A canary: it must reach no page and no log line.
CLIENT_SECRET = "sso-client-secret-canary-5f0c9d2e71b84a66"
PASSWORD = "correct horse battery staple"
User = get_user_model()


# The identity provider


class IdentityProvider:
    def __init__(self, issuer: str, accounts_file: Path):
        self.issuer = issuer
        self.accounts_file = accounts_file

    def set_accounts(self, *accounts: dict) -> None:
        """Each ``{"login", "groups"}`` and optionally ``sub``, ``email``, ``name``."""
        full = [
            {
                "sub": f"sub-{a['login']}",
                "email": f"{a['login']}@example.com",
                "name": a["login"].title() + " Example",
                "password": PASSWORD,
                **a,
            }
            for a in accounts
        ]
        self.accounts_file.write_text(json.dumps({"accounts": full}))

    def next_id_token(self, mode: str) -> None:
        """The provider's next token response carries its ID token changed by ``mode``."""
        response = httpx.post(f"{self.issuer}/_test/next-id-token", data={"mode": mode})
        assert response.status_code == 204


@pytest.fixture(scope="module")
def idp(live_server, tmp_path_factory):
    require_node("oidc-provider", "The single sign-on tests")
    workdir = tmp_path_factory.mktemp("idp")
    accounts = workdir / "accounts.json"
    accounts.write_text(json.dumps({"accounts": []}))
    out, err = workdir / "stdout", workdir / "stderr"
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(
            ["node", str(NODE_DIR / "oidc_provider.mjs")],
            cwd=NODE_DIR,
            env={
                **os.environ,
                "OIDC_CLIENT_ID": CLIENT_ID,
                "OIDC_CLIENT_SECRET": CLIENT_SECRET,
                "OIDC_REDIRECT_URI": f"{live_server.url}/accounts/oidc/sso/login/callback/",
                "OIDC_ACCOUNTS_FILE": str(accounts),
            },
            stdout=stdout,
            stderr=stderr,
        )
    try:

        def started():
            if process.poll() is not None:
                raise AssertionError(f"the identity provider exited: {err.read_text()}")
            line = out.read_text().strip()
            return json.loads(line.splitlines()[0])["issuer"] if line else None

        issuer = wait_for(started, timeout=30)

        def discovery_answers():
            try:
                return httpx.get(f"{issuer}/.well-known/openid-configuration").status_code == 200
            except httpx.TransportError:
                return False

        wait_for(discovery_answers, timeout=30)
        yield IdentityProvider(issuer, accounts)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def sso_on(idp, settings):
    settings.TOOLHUB_SSO_ISSUER = idp.issuer
    settings.TOOLHUB_SSO_CLIENT_ID = CLIENT_ID
    settings.TOOLHUB_SSO_CLIENT_SECRET = CLIENT_SECRET
    settings.TOOLHUB_SSO_NAME = "Acme ID"
    settings.TOOLHUB_SSO_GROUPS_CLAIM = "groups"
    settings.TOOLHUB_SSO_SCOPES = ["openid", "email", "profile", "groups"]
    settings.TOOLHUB_SSO_GROUP_ROLES = {}
    return settings


# Driving a sign-in over HTTP


class SignIn:
    """One browser's sign-in: its client (cookies) and the page it ended on."""

    def __init__(self, client: httpx.Client, response: httpx.Response, pages: list[str]):
        self.client = client
        self.response = response
        self.pages = pages

    def admin_index(self) -> httpx.Response:
        return self.client.get(str(self.response.url.copy_with(path="/admin/", query=None)))


def sign_in(live_server, idp, login: str, password: str = PASSWORD, next_path="/admin/"):
    client = httpx.Client(follow_redirects=True, timeout=30)
    pages = []
    page = client.get(f"{live_server.url}/admin/login/", params={"next": next_path})
    pages.append(page.text)
    form = form_of(page, "sso-login-form")
    response = client.post(urljoin(str(page.url), form["action"]), data=form["fields"])
    for _ in range(3):  # the provider's login form, then its consent form
        if not str(response.url).startswith(idp.issuer):
            break
        pages.append(response.text)
        form = forms_of(response)[0]
        data = dict(form["fields"])
        if "password" in data:
            data.update(login=login, password=password)
        response = client.post(urljoin(str(response.url), form["action"]), data=data)
    assert str(response.url).startswith(live_server.url), response.url
    pages.append(response.text)
    return SignIn(client, response, pages)


def person(login: str):
    return User.objects.get(socialaccount__uid__endswith=f"#sub-{login}")


def events(action: str, **filters):
    return list(AuditEvent.objects.filter(action=action, **filters).order_by("id"))


def roles_of(user) -> set[str]:
    return set(user.groups.values_list("name", flat=True))


live = pytest.mark.django_db(transaction=True)


# Signing in


@live
def test_a_first_sign_in_creates_a_person_linked_by_issuer_and_subject_with_the_mapped_roles(
    live_server, idp, sso_on
):
    make_role("analyst")
    sso_on.TOOLHUB_SSO_GROUP_ROLES = {"acme-analysts": {"roles": ["analyst"], "staff": False}}
    idp.set_accounts({"login": "alice", "groups": ["acme-analysts", "acme-everyone"]})

    signed = sign_in(live_server, idp, "alice")

    account = SocialAccount.objects.get()
    assert account.provider == "sso"
    assert account.uid == f"{idp.issuer}#sub-alice"
    alice = account.user
    assert alice.username == "alice"
    assert (alice.email, alice.first_name, alice.last_name) == (
        "alice@example.com",
        "Alice",
        "Example",
    )
    assert not alice.has_usable_password()
    assert roles_of(alice) == {"analyst"}
    assert not alice.is_staff
    # Signed in, but not staff: the admin says so instead of asking for a password.
    assert "You are authenticated as alice" in signed.response.text
    created = events("user.created", target_id=str(alice.pk))
    assert len(created) == 1 and created[0].actor is None
    assert created[0].after["via"] == "sso"
    assert created[0].after["subject"] == "sub-alice"
    added = events("role.member_added", target_repr="analyst")
    assert [e.after["member"] for e in added] == ["alice"]
    assert added[0].after["via"] == "sso"
    login = events("sso.login")
    assert len(login) == 1
    assert login[0].actor_id == alice.pk
    assert login[0].after["issuer"] == idp.issuer
    assert login[0].after["created"] is True
    assert login[0].after["groups"] == ["acme-analysts", "acme-everyone"]
    assert login[0].after["roles_added"] == ["analyst"]


@live
def test_a_later_sign_in_takes_away_the_role_of_a_group_left_and_keeps_roles_no_mapping_names(
    live_server, idp, sso_on
):
    role_a, role_b = make_role("team-a-role"), make_role("team-b-role")
    by_hand = make_role("given-by-hand")
    # One mapping from the environment, one from the admin: both apply.
    sso_on.TOOLHUB_SSO_GROUP_ROLES = {"team-a": {"roles": ["team-a-role"], "staff": False}}
    sso_services.sso_mapping_create(actor=None, idp_group="team-b", role=role_b)
    idp.set_accounts({"login": "bob", "groups": ["team-a", "team-b"]})
    sign_in(live_server, idp, "bob")
    bob = person("bob")
    assert roles_of(bob) == {"team-a-role", "team-b-role"}
    bob.groups.add(by_hand)

    idp.set_accounts({"login": "bob", "groups": ["team-a"]})
    sign_in(live_server, idp, "bob")

    assert User.objects.filter(socialaccount__isnull=False).count() == 1
    assert roles_of(person("bob")) == {"team-a-role", "given-by-hand"}
    removed = events("role.member_removed")
    assert [(e.target_repr, e.before["member"], e.before["via"]) for e in removed] == [
        ("team-b-role", "bob", "sso")
    ]
    last = events("sso.login")[-1]
    assert last.after["created"] is False
    assert last.after["roles_removed"] == ["team-b-role"]
    assert last.after["roles_added"] == []
    assert role_a.pk and events("user.created", target_id=str(bob.pk))


@live
def test_mappings_make_platform_admins_and_reviewers_with_admin_access_and_take_it_back(
    live_server, idp, sso_on
):
    ensure_standard_roles()
    sso_on.TOOLHUB_SSO_GROUP_ROLES = {
        "toolhub-admins": {"roles": ["platform-admin"], "staff": True},
        "auditors": {"roles": ["reviewer"], "staff": True},
    }
    idp.set_accounts(
        {"login": "carol", "groups": ["toolhub-admins"]},
        {"login": "dave", "groups": ["auditors"]},
    )

    signed = sign_in(live_server, idp, "carol")
    carol = person("carol")
    assert carol.is_staff and authorization.is_platform_admin(carol)
    assert "Governance" in signed.response.text  # the admin's index, signed in
    assert signed.admin_index().status_code == 200
    staff_changed = events("user.updated", target_id=str(carol.pk))
    assert staff_changed and staff_changed[0].after["changed"] == ["is_staff"]

    sign_in(live_server, idp, "dave")
    dave = person("dave")
    assert dave.is_staff and authorization.is_reviewer(dave)
    assert not authorization.is_platform_admin(dave)

    idp.set_accounts({"login": "carol", "groups": []}, {"login": "dave", "groups": ["auditors"]})
    again = sign_in(live_server, idp, "carol")
    carol = User.objects.get(pk=carol.pk)
    assert not carol.is_staff
    assert not authorization.is_platform_admin(carol)
    assert "You are authenticated as carol" in again.response.text
    assert "Governance" not in again.admin_index().text


@live
def test_an_inactive_person_is_refused_and_the_refusal_is_audited(live_server, idp, sso_on):
    make_role("analyst")
    sso_on.TOOLHUB_SSO_GROUP_ROLES = {"acme-analysts": {"roles": ["analyst"], "staff": False}}
    idp.set_accounts({"login": "erin", "groups": []})
    sign_in(live_server, idp, "erin")
    erin = person("erin")
    erin.is_active = False
    erin.save()
    idp.set_accounts({"login": "erin", "groups": ["acme-analysts"]})

    refused = sign_in(live_server, idp, "erin")

    assert refused.response.status_code == 403
    assert "deactivated" in refused.response.text
    assert "Governance" not in refused.admin_index().text
    assert roles_of(erin) == set()  # nothing was brought in line for a refused person
    refusal = events("sso.login_refused")
    assert [(e.target_id, e.after["reason"], e.after["subject"]) for e in refusal] == [
        (str(erin.pk), "inactive", "sub-erin")
    ]
    assert len(events("sso.login")) == 1  # the first sign-in only


@live
def test_a_person_is_never_linked_by_email_to_an_account_of_the_same_address(
    live_server, idp, sso_on
):
    local = make_user("frank", email="frank@example.com", is_staff=True)
    idp.set_accounts({"login": "frank", "groups": []})

    sign_in(live_server, idp, "frank")

    newcomer = person("frank")
    assert newcomer.pk != local.pk
    assert newcomer.username == "frank-2"
    assert newcomer.email == local.email
    assert not SocialAccount.objects.filter(user=local).exists()
    local.refresh_from_db()
    assert local.has_usable_password()


# What ToolHub refuses


REFUSED_TOKENS = {
    "audience": "another client (aud)",
    "issuer": "another issuer (iss)",
    "nonce": "nonce",
    "expired": "expired",
    "tampered": "signature does not verify",
    "unsigned": "'none'",
    "foreign-key": "signature does not verify",
    "hs256": "'HS256'",
}


@live
@pytest.mark.parametrize("mode", sorted(REFUSED_TOKENS))
def test_an_id_token_toolhub_cannot_verify_is_refused(live_server, idp, sso_on, caplog, mode):
    idp.set_accounts({"login": "mallory", "groups": []})
    idp.next_id_token(mode)

    with caplog.at_level(logging.WARNING, logger="registry.sso"):
        refused = sign_in(live_server, idp, "mallory")

    assert refused.response.status_code == 401
    assert "Sign-in refused" in refused.response.text
    assert not SocialAccount.objects.exists()
    assert not User.objects.filter(username__startswith="mallory").exists()
    assert "Governance" not in refused.admin_index().text
    assert REFUSED_TOKENS[mode] in caplog.text
    assert not events("sso.login")


@live
def test_a_token_the_provider_re_signed_unchanged_is_accepted(live_server, idp, sso_on):
    # The control of the test above: its changes, not the re-signing, are refused.
    idp.set_accounts({"login": "grace", "groups": []})
    idp.next_id_token("resign")

    signed = sign_in(live_server, idp, "grace")

    assert signed.response.status_code == 200
    assert person("grace").username == "grace"


@live
def test_the_client_secret_reaches_no_page_and_no_log(live_server, idp, sso_on, caplog):
    ensure_standard_roles()
    sso_on.TOOLHUB_SSO_GROUP_ROLES = {
        "toolhub-admins": {"roles": ["platform-admin"], "staff": True}
    }
    idp.set_accounts({"login": "heidi", "groups": ["toolhub-admins"]})
    with caplog.at_level(logging.DEBUG):
        idp.next_id_token("audience")
        refused = sign_in(live_server, idp, "heidi")
        signed = sign_in(live_server, idp, "heidi")
        admin_pages = [
            signed.client.get(f"{live_server.url}{path}")
            for path in (
                "/admin/",
                "/admin/registry/ssogroupmapping/",
                "/admin/socialaccount/socialaccount/",
                f"/admin/socialaccount/socialaccount/{SocialAccount.objects.get().pk}/change/",
            )
        ]
    assert all(page.status_code == 200 for page in admin_pages)
    assert "Also mapped by TOOLHUB_SSO_GROUP_ROLES" in admin_pages[1].text
    texts = [*refused.pages, *signed.pages, *(p.text for p in admin_pages), caplog.text]
    assert not [t for t in texts if CLIENT_SECRET in t]
    assert not AuditEvent.objects.filter(after__icontains=CLIENT_SECRET).exists()


# The login page


@live
def test_the_local_password_login_still_works_beside_the_button(live_server, idp, sso_on):
    staff = make_user("ivan", is_staff=True, is_superuser=True)
    staff.set_password(PASSWORD)
    staff.save()
    with httpx.Client(follow_redirects=True, timeout=30) as client:
        page = client.get(f"{live_server.url}/admin/login/?next=/admin/")
        assert "Sign in with Acme ID" in page.text
        form = form_of(page, "login-form")
        response = client.post(
            str(page.url), data={**form["fields"], "username": "ivan", "password": PASSWORD}
        )
    assert response.status_code == 200
    assert "Governance" in response.text
    assert not SocialAccount.objects.exists()


@pytest.mark.django_db
def test_without_an_issuer_no_button_no_route_and_no_admin_page_shows(client, settings):
    settings.TOOLHUB_SSO_ISSUER = ""
    page = client.get("/admin/login/?next=/admin/")
    assert page.status_code == 200
    assert 'id="login-form"' in page.text
    assert "Sign in with" not in page.text
    assert client.get("/accounts/oidc/sso/login/").status_code == 404
    assert client.post("/accounts/oidc/sso/login/").status_code == 404
    assert client.get("/accounts/oidc/sso/login/callback/?code=x&state=y").status_code == 404
    admin_user = make_user("judy", is_staff=True, is_superuser=True)
    client.force_login(admin_user)
    index = client.get("/admin/").text
    assert "SSO group mappings" not in index
    assert "Social accounts" not in index
    assert client.get("/admin/registry/ssogroupmapping/").status_code == 403


@pytest.mark.django_db
def test_with_an_issuer_the_button_shows_and_a_get_of_the_route_only_offers_it(client, settings):
    settings.TOOLHUB_SSO_ISSUER = "https://idp.example.com/realms/acme"
    settings.TOOLHUB_SSO_CLIENT_ID = CLIENT_ID
    settings.TOOLHUB_SSO_CLIENT_SECRET = CLIENT_SECRET
    settings.TOOLHUB_SSO_NAME = "Acme ID"
    page = client.get("/admin/login/?next=/admin/tools/")
    assert "Sign in with Acme ID" in page.text
    assert 'action="/accounts/oidc/sso/login/"' in page.text
    assert 'name="next" value="/admin/tools/"' in page.text
    assert CLIENT_SECRET not in page.text
    # A link alone never starts a sign-in: GET shows a button that POSTs (CSRF-protected).
    offered = client.get("/accounts/oidc/sso/login/?next=/admin/")
    assert offered.status_code == 200
    assert 'method="post"' in offered.text
    assert "Sign in with Acme ID" in offered.text
    assert client.get("/accounts/oidc/other/login/").status_code == 404


@pytest.mark.django_db
def test_a_provider_that_cannot_be_reached_gives_a_page_not_a_server_error(
    client, settings, caplog
):
    settings.TOOLHUB_SSO_ISSUER = "http://127.0.0.1:9"  # discard: nothing answers
    settings.TOOLHUB_SSO_CLIENT_ID = CLIENT_ID
    settings.TOOLHUB_SSO_CLIENT_SECRET = CLIENT_SECRET
    with caplog.at_level(logging.WARNING, logger="registry.sso"):
        response = client.post("/accounts/oidc/sso/login/", {"next": "/admin/"})
    assert response.status_code == 502
    assert "cannot be reached" in response.text
    assert "single sign-on could not start: ConnectionError" in caplog.text


# The mappings


@pytest.mark.django_db
def test_only_platform_admins_write_mappings_and_each_write_is_audited(staff_user, plain_user):
    role = make_role("mapped")
    with pytest.raises(PermissionDenied):
        sso_services.sso_mapping_create(actor=plain_user, idp_group="g", role=role)
    mapping = sso_services.sso_mapping_create(actor=staff_user, idp_group=" g ", role=role)
    assert mapping.idp_group == "g"
    sso_services.sso_mapping_update(actor=staff_user, mapping=mapping, data={"makes_staff": True})
    sso_services.sso_mapping_delete(actor=staff_user, mapping=mapping)
    assert not SsoGroupMapping.objects.exists()
    trail = AuditEvent.objects.filter(action__startswith="sso_mapping.").order_by("id")
    assert [(e.action, e.actor_id) for e in trail] == [
        ("sso_mapping.created", staff_user.pk),
        ("sso_mapping.updated", staff_user.pk),
        ("sso_mapping.deleted", staff_user.pk),
    ]
    assert trail[1].before["makes_staff"] is False and trail[1].after["makes_staff"] is True


@pytest.mark.django_db
def test_a_mapping_that_gives_nothing_or_repeats_another_is_refused(staff_user):
    from toolhub.exceptions import Conflict, InvalidInput

    role = make_role("mapped")
    with pytest.raises(InvalidInput):
        sso_services.sso_mapping_create(actor=staff_user, idp_group="g")
    sso_services.sso_mapping_create(actor=staff_user, idp_group="g", role=role)
    with pytest.raises(Conflict):
        sso_services.sso_mapping_create(actor=staff_user, idp_group="g", role=role)


@pytest.mark.django_db
def test_the_admin_writes_mappings_through_the_service(client, staff_user, settings):
    settings.TOOLHUB_SSO_ISSUER = "https://idp.example.com"
    settings.TOOLHUB_SSO_CLIENT_ID = CLIENT_ID
    settings.TOOLHUB_SSO_CLIENT_SECRET = CLIENT_SECRET
    role = make_role("mapped")
    client.force_login(staff_user)
    response = client.post(
        "/admin/registry/ssogroupmapping/add/",
        {"idp_group": "acme-ops", "role": role.pk, "makes_staff": "on"},
    )
    assert response.status_code == 302, response.content[:2000]
    mapping = SsoGroupMapping.objects.get()
    assert (mapping.idp_group, mapping.role, mapping.makes_staff) == ("acme-ops", role, True)
    assert AuditEvent.objects.filter(action="sso_mapping.created", actor=staff_user).exists()
    listing = client.get("/admin/registry/ssogroupmapping/")
    assert "platform admin" not in listing.text  # what the mapped role makes: nothing special


# Settings and claims


def test_the_group_roles_variable_is_read_and_its_mistakes_are_named():
    assert _group_roles('{"a": ["r1", "r2"], "b": {"roles": [], "staff": true}}') == {
        "a": {"roles": ["r1", "r2"], "staff": False},
        "b": {"roles": [], "staff": True},
    }
    for raw, said in (
        ("{not json", "not JSON"),
        ('["a"]', "expected a JSON object"),
        ('{"a": {"roles": "r1"}}', "list of role names"),
        ('{"a": {"roles": [], "staff": false}}', "gives nothing"),
        ('{"a": {"roles": ["r"], "admin": true}}', "expected a JSON object"),
    ):
        with pytest.raises(ImproperlyConfigured, match=said):
            _group_roles(raw)


def test_an_issuer_without_its_client_secret_is_refused_naming_what_is_missing(tmp_path):
    result = run_settings(
        tmp_path,
        TOOLHUB_SSO_ISSUER="https://idp.example.com/realms/acme",
        TOOLHUB_SSO_CLIENT_ID="toolhub",
    )
    assert result.returncode != 0
    assert "TOOLHUB_SSO_CLIENT_SECRET must be set" in result.stderr
    plain = run_settings(
        tmp_path,
        TOOLHUB_SSO_ISSUER="http://idp.example.com",
        TOOLHUB_SSO_CLIENT_ID="toolhub",
        TOOLHUB_SSO_CLIENT_SECRET=CLIENT_SECRET,
    )
    assert "must use https" in plain.stderr
    assert CLIENT_SECRET not in plain.stderr


@pytest.mark.django_db
def test_a_new_persons_username_is_safe_and_unused():
    make_user("zoe")
    assert sso_claims.unique_username({"id_token": {"preferred_username": "zoe"}}) == "zoe-2"
    assert (
        sso_claims.unique_username({"id_token": {"preferred_username": "agent.helper"}})
        == "person.helper"
    )
    assert (
        sso_claims.unique_username({"userinfo": {"email": "Ann O'Neil <x>@example.com"}})
        == "Ann.ONeil.x"
    )
    assert sso_claims.unique_username({"id_token": {"preferred_username": "  "}}) == "person"


def test_a_link_is_keyed_by_issuer_and_subject():
    assert sso_claims.identity_uid("https://idp", "42") == "https://idp#42"
    long = sso_claims.identity_uid("https://idp/" + "x" * 200, "42")
    assert long.startswith("sha256:") and len(long) <= sso_claims.UID_MAX_CHARS
    assert sso_claims.groups({"id_token": {"groups": "solo"}, "userinfo": {"groups": ["x"]}}) == [
        "solo"
    ]
    assert sso_claims.groups({"userinfo": {"groups": ["x", 3]}}) == ["x"]


@pytest.mark.django_db
def test_deleting_a_mapped_role_names_its_mappings_in_the_audit_event(staff_user):
    from registry.services import roles as role_services

    role = make_role("mapped")
    sso_services.sso_mapping_create(actor=staff_user, idp_group="acme-ops", role=role)
    role_services.role_delete(actor=staff_user, role=role)
    deleted = AuditEvent.objects.get(action="role.deleted")
    assert deleted.before["sso_group_mappings"] == ["acme-ops → mapped"]
    assert not SsoGroupMapping.objects.exists()
