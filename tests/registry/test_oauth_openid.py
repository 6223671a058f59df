"""OpenID Connect on ToolHub's authorization server, in-process: the discovery document
says what the server does and agrees with the RFC 8414 one, the JWKS holds the public key
only, and the identity scopes give no right and are refused where no person signs in."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.test import Client
from jwcrypto import jwk
from oauth2_provider.models import Application

from registry.oauth.delegation import REST_SCOPES
from registry.oauth.validator import IDENTITY_SCOPES

ORIGIN = "http://testserver"


@pytest.fixture
def documents(settings):
    settings.ALLOWED_HOSTS = ["testserver"]
    client = Client()
    server = client.get("/.well-known/oauth-authorization-server")
    openid = client.get("/.well-known/openid-configuration")
    assert server.status_code == openid.status_code == 200
    return server.json(), openid.json()


def test_the_openid_configuration_has_the_origin_as_issuer_like_rfc_8414(documents):
    server, openid = documents
    assert openid["issuer"] == server["issuer"] == ORIGIN


def test_the_openid_configuration_says_what_the_server_does(documents):
    _, openid = documents
    assert openid["authorization_endpoint"] == ORIGIN + "/oauth/authorize/"
    assert openid["token_endpoint"] == ORIGIN + "/oauth/token/"
    assert openid["userinfo_endpoint"] == ORIGIN + "/oauth/userinfo/"
    assert openid["jwks_uri"] == ORIGIN + "/oauth/jwks/"
    assert openid["registration_endpoint"] == ORIGIN + "/oauth/register/"
    assert openid["revocation_endpoint"] == ORIGIN + "/oauth/revoke_token/"
    assert openid["introspection_endpoint"] == ORIGIN + "/oauth/introspect/"
    assert openid["response_types_supported"] == ["code"]
    assert openid["grant_types_supported"] == [
        "authorization_code",
        "refresh_token",
        "client_credentials",
    ]
    assert openid["code_challenge_methods_supported"] == ["S256"]
    assert openid["id_token_signing_alg_values_supported"] == ["RS256"]
    assert openid["subject_types_supported"] == ["public"]
    assert set(openid["scopes_supported"]) == {
        "openid",
        "profile",
        "email",
        "tools:read",
        "tools:call",
    }
    assert openid["token_endpoint_auth_methods_supported"] == [
        "none",
        "client_secret_basic",
        "client_secret_post",
    ]
    assert "none" not in openid["introspection_endpoint_auth_methods_supported"]
    assert {"sub", "name", "email", "preferred_username"} <= set(openid["claims_supported"])
    assert openid["request_uri_parameter_supported"] is False
    assert openid["authorization_response_iss_parameter_supported"] is True


def test_both_documents_agree_on_every_field_they_share(documents):
    server, openid = documents
    shared = set(server) & set(openid)
    assert {"issuer", "token_endpoint", "scopes_supported", "jwks_uri"} <= shared
    assert {name: openid[name] for name in shared} == server


def test_registration_is_not_announced_when_it_is_off(documents, settings):
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "DCR_ENABLED": False}
    openid = Client().get("/.well-known/openid-configuration").json()
    assert "registration_endpoint" not in openid


def test_the_jwks_serves_the_signing_key_public_half_only(settings):
    settings.ALLOWED_HOSTS = ["testserver"]
    keys = Client().get("/oauth/jwks/").json()["keys"]
    assert len(keys) == 1
    served = keys[0]
    assert served["kty"] == "RSA" and served["alg"] == "RS256" and served["use"] == "sig"
    assert not {"d", "p", "q", "dp", "dq", "qi"} & set(served)
    signing = jwk.JWK.from_pem(settings.TOOLHUB_OIDC_RSA_PRIVATE_KEY.encode())
    assert served["kid"] == signing.thumbprint()
    assert served["n"] == signing.export_public(as_dict=True)["n"]


def test_the_identity_scopes_give_no_right_at_a_resource():
    assert IDENTITY_SCOPES == {"openid", "profile", "email"}
    assert not IDENTITY_SCOPES & set(REST_SCOPES.values())
    assert not IDENTITY_SCOPES & set(settings.OAUTH2_PROVIDER["DEFAULT_SCOPES"])
    assert "openid" not in settings.TOOLHUB_OAUTH_SCOPES  # not in the resources' metadata


@pytest.mark.django_db
def test_a_client_registered_by_rfc_7591_signs_id_tokens_with_rs256(settings):
    settings.ALLOWED_HOSTS = ["testserver"]
    answer = Client().post(
        "/oauth/register/",
        {
            "client_name": "Desk",
            "redirect_uris": ["http://127.0.0.1:8765/callback"],
            "token_endpoint_auth_method": "none",
        },
        content_type="application/json",
    )
    assert answer.status_code == 201, answer.content
    client = Application.objects.get(client_id=answer.json()["client_id"])
    assert client.algorithm == Application.RS256_ALGORITHM


@pytest.mark.django_db
def test_the_admin_registers_clients_with_rs256_id_tokens_only(superuser, settings):
    settings.ALLOWED_HOSTS = ["testserver"]
    admin = Client()
    admin.force_login(superuser)
    page = admin.get("/admin/oauth2_provider/application/add/").content.decode()
    select = page.split('name="algorithm"', 1)[1].split("</select>", 1)[0]
    assert re.findall(r'<option value="([^"]*)"', select) == ["RS256"]
    assert 'value="RS256" selected' in select
