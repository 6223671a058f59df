"""The OAuth server's rules that need no live server: which resources a token may be for,
which redirect URIs are refused, and beat's removal of expired tokens."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, set_token_value

from registry.oauth import resources
from registry.oauth.validator import redirect_refusal
from registry.tasks import clear_expired_oauth_tokens
from tests.factories import make_user


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("http://testserver/mcp", ("mcp", None)),
        ("http://testserver/mcp/", ("mcp", None)),
        ("https://testserver/mcp/finance-tools", ("mcp", "finance-tools")),
        ("http://testserver/api/v1", ("rest", None)),
    ],
)
def test_toolhubs_resources_are_named_by_origin_and_path(settings, uri, expected):
    settings.ALLOWED_HOSTS = ["testserver"]
    assert resources.parse(uri) == expected


@pytest.mark.parametrize(
    ("uri", "said"),
    [
        ("ftp://testserver/mcp", "not an absolute http(s) URL"),
        ("http://elsewhere.example/mcp", "not on a host this server answers to"),
        ("http://testserver/admin/", "not one of ToolHub's"),
        ("http://testserver/mcp?toolset=x", "query, fragment or user part"),
        ("http://user@testserver/mcp", "query, fragment or user part"),
        ("http://testserver/mcp/a/b", "not one of ToolHub's"),
    ],
)
def test_any_other_resource_is_refused_saying_why(settings, uri, said):
    settings.ALLOWED_HOSTS = ["testserver"]
    with pytest.raises(resources.ResourceError, match=re.escape(said)):
        resources.single([uri])


def test_a_token_is_for_exactly_one_resource(settings):
    settings.ALLOWED_HOSTS = ["testserver"]
    with pytest.raises(resources.ResourceError, match="exactly one"):
        resources.single([])
    with pytest.raises(resources.ResourceError, match="one resource per token"):
        resources.single(["http://testserver/mcp", "http://testserver/api/v1"])


@pytest.mark.parametrize(
    ("uri", "refused"),
    [
        ("https://client.example/callback", False),
        ("http://127.0.0.1:9000/callback", False),
        ("http://[::1]:9000/callback", False),
        ("http://localhost/callback", False),
        ("http://client.example/callback", True),
        ("http://10.0.0.5/callback", True),
        ("https://client.example/callback#frag", True),
    ],
)
def test_plain_http_redirects_go_to_loopback_only(uri, refused):
    assert (redirect_refusal(uri) is not None) is refused


@pytest.mark.django_db
def test_beat_removes_expired_tokens_and_keeps_live_ones():
    person = make_user("token-owner")
    client = Application.objects.create(
        name="c",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1/cb",
    )
    kept = []
    for raw, hours in (("tho_expired", -1), ("tho_live", 1)):
        access = AccessToken(
            user=person,
            application=client,
            expires=timezone.now() + timedelta(hours=hours),
            scope="tools:read",
        )
        set_token_value(access, raw)
        access.save()
        kept.append(access.pk)
    clear_expired_oauth_tokens()
    assert list(AccessToken.objects.values_list("pk", flat=True)) == [kept[1]]
