"""The gate's Host and Origin rule, case by case (no server needed)."""

from __future__ import annotations

import pytest

from executions.mcp_server.gate import Refused, check_host_and_origin


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
        check_host_and_origin(headers)
        return
    with pytest.raises(Refused) as raised:
        check_host_and_origin(headers)
    assert raised.value.status == refused
