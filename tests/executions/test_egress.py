"""The egress guard: refused destinations, normalization, allowlist, resolution."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from executions import egress
from executions.egress import EgressDenied, HostResolutionError, check_host, check_url

_real_getaddrinfo = socket.getaddrinfo


@pytest.fixture
def no_allowlist(settings):
    settings.TOOLHUB_EGRESS_ALLOW = []
    return settings


def fake_dns(monkeypatch, table: dict[str, list[str]], calls: list[str] | None = None):
    """Answer getaddrinfo for the names in ``table``; anything else goes to the real resolver."""

    def getaddrinfo(host, port, *args, **kwargs):
        if isinstance(host, str) and host.lower() in table:
            if calls is not None:
                calls.append(host)
            out = []
            for address in table[host.lower()]:
                if ":" in address:
                    out.append((socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0)))
                else:
                    out.append((socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port)))
            return out
        return _real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


REFUSED_URLS = [
    ("http://127.0.0.1/", "loopback"),
    ("http://127.0.0.2:8080/x", "loopback"),
    ("http://[::1]/", "loopback"),
    ("http://10.0.0.1/", "private"),
    ("http://172.16.5.4/", "private"),
    ("http://172.31.255.255/", "private"),
    ("http://192.168.1.1/", "private"),
    ("http://169.254.10.10/", "link-local"),
    ("http://169.254.169.254/latest/meta-data/", "metadata"),
    ("http://[fd00:ec2::254]/", "metadata"),
    ("http://100.100.100.200/", "metadata"),
    ("http://192.0.0.192/", "metadata"),
    ("http://100.64.0.1/", "carrier-grade NAT"),
    ("http://100.127.255.254/", "carrier-grade NAT"),
    ("http://224.0.0.1/", "multicast"),
    ("http://239.255.255.250:1900/", "multicast"),
    ("http://[ff02::1]/", "multicast"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://0/", "unspecified"),
    ("http://[::]/", "unspecified"),
    ("http://[::ffff:127.0.0.1]/", "loopback"),
    ("http://[::ffff:7f00:1]/", "loopback"),
    ("http://[::ffff:169.254.169.254]/", "metadata"),
    ("http://[::ffff:10.1.2.3]/", "private"),
    ("http://2130706433/", "loopback"),  # decimal
    ("http://0x7f000001/", "loopback"),  # hex
    ("http://0x7f.1/", "loopback"),  # mixed short form
    ("http://127.1/", "loopback"),  # short form
    ("http://127.0.1/", "loopback"),
    ("http://127.0.0.1./", "loopback"),  # trailing dot
    ("http://2852039166/", "metadata"),  # 169.254.169.254 in decimal
    ("http://0xa9fea9fe/", "metadata"),  # ... and in hex
    ("http://[fc00::1]/", "unique-local"),
    ("http://[fd12:3456::1]/", "unique-local"),
    ("http://[fe80::1]/", "link-local"),
    ("http://[64:ff9b::7f00:1]/", "embedding 127.0.0.1"),  # NAT64 of loopback
    ("http://[64:ff9b::a9fe:a9fe]/", "embedding 169.254.169.254"),
    ("http://[2002:7f00:1::]/", "embedding 127.0.0.1"),  # 6to4 of loopback
    ("http://[2002:c0a8:101::1]/", "embedding 192.168.1.1"),
    ("http://[::127.0.0.1]/", "IPv4-compatible"),
    ("http://240.0.0.1/", "reserved"),
    ("http://255.255.255.255/", "broadcast"),
    ("http://198.18.0.1/", "benchmarking"),
    ("http://192.0.2.10/", "documentation"),
    ("http://[2001:db8::1]/", "documentation"),
    ("http://localhost/", "resolves to 127.0.0.1"),
    ("http://LocalHost./", "resolves to 127.0.0.1"),
    ("http://evil.example\\@127.0.0.1/", "loopback"),  # parser confusion: httpx's host wins
    ("http://1.2.3.4.5/", "malformed"),
    ("http://999.1.1.1/", "invalid"),  # rejected by the URL parser
    ("ftp://example.com/file", "scheme"),
    ("file:///etc/passwd", "scheme"),
    ("gopher://127.0.0.1:70/", "scheme"),
    ("http:///nohost", "no host"),
]


@pytest.mark.parametrize(("url", "reason"), REFUSED_URLS)
def test_refused_urls(no_allowlist, url, reason):
    with pytest.raises(EgressDenied) as info:
        check_url(url)
    assert reason.lower() in str(info.value).lower()
    assert "refused" in str(info.value)


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("0177.0.0.1", "127.0.0.1"),  # octal (httpx itself rejects this in a URL)
        ("0177.1", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),  # octal, one part
        ("0x7F.0x0.0x0.0x1", "127.0.0.1"),
        ("012.0.0.1", "10.0.0.1"),
        ("0300.0250.1.1", "192.168.1.1"),
        ("::ffff:127.0.0.1", "127.0.0.1"),
        ("[::1]", "::1"),
    ],
)
def test_refused_numeric_host_forms(no_allowlist, monkeypatch, host, expected):
    def no_dns(*args, **kwargs):
        raise AssertionError("an IP literal must never reach the resolver")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    with pytest.raises(EgressDenied) as info:
        check_host(host, 80)
    assert expected in str(info.value)


def test_octal_url_is_refused_not_resolved(no_allowlist):
    with pytest.raises(EgressDenied):
        check_url("http://0177.0.0.1/")


def test_message_names_host_and_reason(no_allowlist):
    with pytest.raises(EgressDenied) as info:
        check_url("http://127.0.0.1:9/")
    assert str(info.value) == (
        "egress to '127.0.0.1' refused: 127.0.0.1 is a loopback address"
        " (to allow it, list 127.0.0.1 in the TOOLHUB_EGRESS_ALLOW environment variable)"
    )
    assert info.value.host == "127.0.0.1"
    assert info.value.reason == "127.0.0.1 is a loopback address"

    with pytest.raises(EgressDenied) as info:
        check_url("http://localhost:9/")
    assert "'localhost'" in str(info.value)
    assert "resolves to 127.0.0.1, a loopback address" in str(info.value)


@pytest.mark.parametrize(
    ("literal", "address"),
    [
        ("8.8.8.8", "8.8.8.8"),
        ("134744072", "8.8.8.8"),
        ("0x08080808", "8.8.8.8"),
        ("[2606:4700:4700::1111]", "2606:4700:4700::1111"),
        ("[::ffff:8.8.8.8]", "8.8.8.8"),
    ],
)
def test_public_ip_literals_allowed_and_normalized(no_allowlist, monkeypatch, literal, address):
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: pytest.fail("no DNS for literals"))
    destination = check_url(f"https://{literal}/path")
    assert destination.addresses == (address,)
    assert destination.address == address
    assert destination.port == 443
    assert destination.allowed_by == "policy"


def test_any_private_address_in_a_resolution_refuses(no_allowlist, monkeypatch):
    fake_dns(monkeypatch, {"mixed.example": ["93.184.216.34", "10.0.0.7"]})
    with pytest.raises(EgressDenied) as info:
        check_host("mixed.example", 443)
    assert "10.0.0.7" in str(info.value)
    assert "private" in str(info.value)


def test_mapped_address_in_resolution_refuses(no_allowlist, monkeypatch):
    fake_dns(monkeypatch, {"mapped.example": ["::ffff:10.0.0.1"]})
    with pytest.raises(EgressDenied, match=r"resolves to 10\.0\.0\.1, a private"):
        check_host("mapped.example", 80)


def test_public_name_allowed_with_all_addresses_pinned(no_allowlist, monkeypatch):
    fake_dns(monkeypatch, {"api.example": ["93.184.216.34", "2606:2800:220:1::1"]})
    destination = check_url("https://api.example/v1")
    assert destination.addresses == ("93.184.216.34", "2606:2800:220:1::1")
    assert destination.host == "api.example"
    assert destination.port == 443


@pytest.mark.parametrize(
    ("host", "listed"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("::ffff:10.0.0.1", "10.0.0.1"),
        ("[::1]", "::1"),
        ("2130706433", "127.0.0.1"),
        ("Db.Internal.", "db.internal or 10.1.2.3"),
    ],
)
def test_refusal_says_how_to_allow_it_and_the_hint_works(settings, monkeypatch, host, listed):
    settings.TOOLHUB_EGRESS_ALLOW = []
    fake_dns(monkeypatch, {"db.internal": ["10.1.2.3"]})
    with pytest.raises(EgressDenied) as info:
        check_host(host, 80)
    message = str(info.value)
    assert message.startswith(f"egress to {host!r} refused: ")
    assert message.endswith(
        f" (to allow it, list {listed} in the TOOLHUB_EGRESS_ALLOW environment variable)"
    )
    assert "TOOLHUB_EGRESS_ALLOW" not in info.value.reason
    # Each thing the hint names, listed alone, does allow the destination.
    for entry in listed.split(" or "):
        settings.TOOLHUB_EGRESS_ALLOW = [entry]
        assert check_host(host, 80).addresses


def test_only_refusals_the_allowlist_can_lift_carry_the_hint(no_allowlist):
    with pytest.raises(EgressDenied, match=r"list 10\.0\.0\.1 in the TOOLHUB_EGRESS_ALLOW"):
        check_url("http://10.0.0.1/")
    for call in (
        lambda: check_host("127.0.0.1", 0),
        lambda: check_url("ftp://127.0.0.1/"),
        lambda: check_host("0x7f.0.0.0.1", 80),
        lambda: check_host("bad host", 80),
    ):
        with pytest.raises(EgressDenied) as info:
            call()
        assert "TOOLHUB_EGRESS_ALLOW" not in str(info.value)


def test_cidr_allowlist(settings):
    settings.TOOLHUB_EGRESS_ALLOW = ["127.0.0.1/32", "10.20.0.0/16"]
    assert check_host("127.0.0.1", 80).allowed_by == "network"
    assert check_host("::ffff:127.0.0.1", 80).addresses == ("127.0.0.1",)
    assert check_host("2130706433", 80).addresses == ("127.0.0.1",)
    assert check_host("10.20.3.4", 80).addresses == ("10.20.3.4",)


@pytest.mark.parametrize("host", ["127.0.0.2", "10.21.0.1", "::1", "169.254.169.254"])
def test_cidr_allowlist_refuses_addresses_outside_its_networks(settings, host):
    settings.TOOLHUB_EGRESS_ALLOW = ["127.0.0.1/32", "10.20.0.0/16"]
    with pytest.raises(EgressDenied):
        check_host(host, 80)


def test_cidr_allowlist_applies_to_resolved_names(settings, monkeypatch):
    settings.TOOLHUB_EGRESS_ALLOW = ["10.20.0.0/16"]
    fake_dns(monkeypatch, {"db.internal": ["10.20.0.5"], "other.internal": ["10.30.0.5"]})
    assert check_host("db.internal", 5432).addresses == ("10.20.0.5",)
    with pytest.raises(EgressDenied):
        check_host("other.internal", 5432)


def test_allowlist_as_comma_separated_string(settings):
    settings.TOOLHUB_EGRESS_ALLOW = "192.168.0.0/24, 127.0.0.1"
    assert check_host("192.168.0.9", 80).addresses == ("192.168.0.9",)
    assert check_host("127.0.0.1", 80).addresses == ("127.0.0.1",)
    with pytest.raises(EgressDenied):
        check_host("192.168.1.9", 80)


LOOKALIKES = ["evil.api.internal.example", "api.internal.example.evil.test"]


@pytest.fixture
def name_allowlist(settings, monkeypatch):
    settings.TOOLHUB_EGRESS_ALLOW = ["api.internal.example"]
    fake_dns(monkeypatch, {name: ["10.1.2.3"] for name in ["api.internal.example", *LOOKALIKES]})


def test_host_name_allowlist_is_exact(name_allowlist):
    destination = check_host("API.Internal.Example.", 443)
    assert destination.addresses == ("10.1.2.3",)
    assert destination.allowed_by == "host"
    # A name entry never opens the address itself.
    with pytest.raises(EgressDenied):
        check_host("10.1.2.3", 443)


@pytest.mark.parametrize("host", LOOKALIKES)
def test_host_name_allowlist_refuses_names_that_only_contain_it(name_allowlist, host):
    with pytest.raises(EgressDenied):
        check_host(host, 443)


def test_allowlist_is_read_at_call_time(settings):
    settings.TOOLHUB_EGRESS_ALLOW = ["127.0.0.1/32"]
    check_host("127.0.0.1", 80)
    settings.TOOLHUB_EGRESS_ALLOW = []
    with pytest.raises(EgressDenied):
        check_host("127.0.0.1", 80)


def test_unresolvable_name_is_a_resolution_error(no_allowlist, monkeypatch):
    def fail(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", fail)
    with pytest.raises(HostResolutionError, match=r"nowhere\.invalid"):
        check_host("nowhere.invalid", 80)


def test_resolution_is_cached_but_policy_reapplied(settings, monkeypatch):
    settings.TOOLHUB_EGRESS_ALLOW = ["10.9.0.0/16"]
    calls: list[str] = []
    fake_dns(monkeypatch, {"cached.example": ["10.9.0.1"]}, calls)
    check_host("cached.example", 80)
    check_host("cached.example", 80)
    assert calls == ["cached.example"]
    settings.TOOLHUB_EGRESS_ALLOW = []
    with pytest.raises(EgressDenied):
        check_host("cached.example", 80)
    assert calls == ["cached.example"]
    egress.clear_dns_cache()
    settings.TOOLHUB_EGRESS_ALLOW = ["10.9.0.0/16"]
    check_host("cached.example", 80)
    assert calls == ["cached.example", "cached.example"]


def test_invalid_port_refused(no_allowlist):
    with pytest.raises(EgressDenied, match="invalid port"):
        check_host("8.8.8.8", 0)
    with pytest.raises(EgressDenied, match="invalid port"):
        check_host("8.8.8.8", 70000)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("10.1.258", "10.1.1.2"),
        ("0x", "0.0.0.0"),
        ("1.2.3.4.", "1.2.3.4"),
        ("[fe80::1]", "fe80::1"),
        ("example.com", None),
        ("a1.example", None),
        ("1x.example", None),
    ],
)
def test_parse_ip_literal(text, expected):
    result = egress.parse_ip_literal(text)
    assert (str(result) if result is not None else None) == expected


@pytest.mark.parametrize(
    "text", ["1.2.3.4.5", "256.1.1.1", "1.2.65536", "08.1.1.1", "example.123", "::zz"]
)
def test_parse_ip_literal_malformed(text):
    with pytest.raises(ValueError):
        egress.parse_ip_literal(text)


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "2a00:1450:4001::1"]
)
def test_public_addresses_have_no_denial_reason(address):
    assert egress.denial_reason(ipaddress.ip_address(address)) is None
