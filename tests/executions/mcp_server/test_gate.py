"""The gate's Host and Origin rule, case by case (no server needed)."""

from __future__ import annotations

import pytest

from executions.mcp_server.checks import Refused, check_host_and_origin


@pytest.mark.parametrize(
    ("allowed_hosts", "origins", "host", "origin", "refused"),
    [
        (["toolhub.example"], [], "toolhub.example", None, None),
        (["toolhub.example"], [], "toolhub.example", "https://toolhub.example", None),
        (["toolhub.example"], [], "toolhub.example", "https://evil.example", 403),
        (["toolhub.example"], [], "evil.example", None, 400),
        (
            ["toolhub.example"],
            ["https://app.example"],
            "toolhub.example",
            "https://app.example",
            None,
        ),
        (["*"], [], "anything.example", None, None),
        (["*"], [], "anything.example", "https://evil.example", 403),  # "*" names no page
        (["toolhub.example"], [], "toolhub.example", "null", 403),
    ],
)
def test_a_browser_origin_must_be_named_and_the_host_allowed(
    settings, allowed_hosts, origins, host, origin, refused
):
    settings.ALLOWED_HOSTS = allowed_hosts
    settings.TOOLHUB_MCP_ALLOWED_ORIGINS = origins
    headers = {"host": host, **({"origin": origin} if origin else {})}
    if refused is None:
        check_host_and_origin(headers, "https")
        return
    with pytest.raises(Refused) as raised:
        check_host_and_origin(headers, "https")
    assert raised.value.status == refused


@pytest.mark.parametrize(
    ("scheme", "host", "origin", "refused"),
    [
        ("https", "toolhub.example", "https://toolhub.example:8443", 403),  # another port
        ("https", "toolhub.example", "http://toolhub.example", 403),  # another scheme
        ("http", "toolhub.example:8000", "http://toolhub.example:3000", 403),
        ("http", "toolhub.example:8000", "http://toolhub.example", 403),  # port 80
        ("http", "toolhub.example:8000", "http://toolhub.example:8000", None),
        ("https", "toolhub.example", "https://toolhub.example:443", None),  # the same origin
        ("https", "toolhub.example", "https://app.example:8443", 403),  # listed, other port
        ("https", "toolhub.example", "http://app.example", 403),  # listed, other scheme
        ("https", "toolhub.example", "https://APP.example:443", None),
    ],
)
def test_an_origin_is_a_whole_origin_its_scheme_host_and_port_compared(
    settings, scheme, host, origin, refused
):
    settings.ALLOWED_HOSTS = ["toolhub.example"]
    settings.TOOLHUB_MCP_ALLOWED_ORIGINS = ["https://app.example"]
    headers = {"host": host, "origin": origin}
    if refused is None:
        check_host_and_origin(headers, scheme)
        return
    with pytest.raises(Refused) as raised:
        check_host_and_origin(headers, scheme)
    assert raised.value.status == refused
    assert "TOOLHUB_MCP_ALLOWED_ORIGINS" in raised.value.body["message"]
