"""The HTTP executor against a real recording server on 127.0.0.1."""

from __future__ import annotations

import base64
import dataclasses
import json
import socket
import threading
import time

import pytest

from executions import egress
from executions.executors import http as http_module
from executions.executors.base import ErrorType, ExecutorResult, ToolCall
from executions.executors.http import HTTPExecutor, get_transport
from tests.executions.boundary import run_at_the_boundary

CANARY = "canary-5ecret-Zq81xP"

_real_getaddrinfo = socket.getaddrinfo


def call(
    configs: dict,
    inputs: dict | None = None,
    *,
    timeout: float = 2.0,
    max_bytes: int = 1024 * 1024,
    secrets: tuple[str, ...] = (),
) -> ExecutorResult:
    tool_call = ToolCall(
        tool_name="test_tool",
        tool_type="http",
        configs=configs,
        inputs=inputs or {},
        timeout_seconds=timeout,
        max_response_bytes=max_bytes,
        secret_values=secrets,
    )
    # As the pipeline sees it: the executor returns the upstream's answer raw, and the
    # runner's one redaction removes the call's secrets (tests/executions/boundary.py).
    return run_at_the_boundary(HTTPExecutor(), tool_call)


def dump(result: ExecutorResult) -> str:
    return json.dumps(dataclasses.asdict(result), default=str)


@pytest.fixture(autouse=True)
def _loopback(allow_loopback):
    """Every test here talks to 127.0.0.1, allowed explicitly."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --------------------------------------------------------------------------- basics


def test_get_echo_with_inputs_in_query(upstream):
    result = call({"base_url": upstream.url, "endpoint": "/echo"}, {"q": "hello world", "n": 3})
    assert result.ok, result.error_message
    assert result.error_type is None
    assert result.upstream_status == 200
    assert set(result.output) == {"status_code", "data", "headers"}
    assert result.output["status_code"] == 200
    assert result.output["data"]["method"] == "GET"
    assert result.output["data"]["query"] == {"q": ["hello world"], "n": ["3"]}
    assert result.output["headers"]["content-type"] == "application/json"
    assert result.latency_ms > 0
    assert result.metadata["method"] == "GET"
    assert result.metadata["truncated"] is False
    request = upstream.last
    assert request.method == "GET"
    assert request.body == b""
    assert request.headers["host"] == f"127.0.0.1:{upstream.port}"


def test_url_joining_and_absolute_endpoint(upstream, upstream2):
    assert call({"base_url": upstream.url + "/echo/", "endpoint": "/v1/items"}).ok
    assert upstream.last.path == "/echo/v1/items"
    assert call({"base_url": upstream.url + "/echo"}).ok
    assert upstream.last.path == "/echo"
    result = call({"base_url": upstream.url, "endpoint": upstream2.url + "/echo/abs"})
    assert result.ok
    assert upstream2.last.path == "/echo/abs"


def test_existing_query_in_endpoint_is_kept(upstream):
    assert call({"base_url": upstream.url, "endpoint": "/echo?fixed=1"}, {"q": "x"}).ok
    assert upstream.last.query == {"fixed": ["1"], "q": ["x"]}


def test_path_placeholders_are_consumed_and_encoded(upstream):
    result = call(
        {"base_url": upstream.url, "endpoint": "/echo/users/{user_id}/items/{item}"},
        {"user_id": "a b/../c", "item": 5, "q": "rest"},
    )
    assert result.ok, result.error_message
    assert upstream.last.path == "/echo/users/a%20b%2F..%2Fc/items/5"
    assert upstream.last.query == {"q": ["rest"]}


def test_missing_placeholder_is_an_input_error(upstream):
    result = call({"base_url": upstream.url, "endpoint": "/echo/{user_id}"}, {"other": 1})
    assert not result.ok
    assert result.error_type == ErrorType.INPUT
    assert "user_id" in result.error_message
    assert result.retryable is False
    assert upstream.requests == []


def test_list_and_bool_inputs_in_query(upstream):
    assert call(
        {"base_url": upstream.url + "/echo"}, {"tag": ["a", "b"], "flag": True, "none": None}
    ).ok
    assert upstream.last.query == {"tag": ["a", "b"], "flag": ["true"]}


@pytest.mark.parametrize("as_string", [False, True])
def test_static_headers_and_query_params(upstream, as_string):
    headers = {"X-Static": "yes", "Accept": "application/json"}
    params = {"api_version": "2", "tenant": "acme"}
    configs = {
        "base_url": upstream.url + "/echo",
        "headers": json.dumps(headers) if as_string else headers,
        "query_params": json.dumps(params) if as_string else params,
    }
    result = call(configs, {"q": "x", "tenant": "evil"})
    assert result.ok, result.error_message
    seen = upstream.last
    assert seen.headers["x-static"] == "yes"
    assert seen.headers["accept"] == "application/json"
    # Static parameters are always sent and win over an input of the same name.
    assert seen.query == {"q": ["x"], "api_version": ["2"], "tenant": ["acme"]}


def test_default_headers_sent_once_unless_the_tool_sets_them(upstream):
    assert call({"base_url": upstream.url + "/echo"}).ok
    seen = upstream.last.headers
    assert seen["user-agent"].startswith("ToolHub-HTTPExecutor/")
    assert seen["accept"] == "*/*"
    assert "gzip" in seen["accept-encoding"]
    custom = {"User-Agent": "acme-bot/2", "accept-encoding": "identity"}
    assert call({"base_url": upstream.url + "/echo", "headers": custom}).ok
    seen = upstream.last.headers
    assert seen["user-agent"] == "acme-bot/2"  # one value: the default is not sent too
    assert seen["accept-encoding"] == "identity"
    names = [name.lower() for name, _ in upstream.last.header_list]
    assert names.count("user-agent") == names.count("accept-encoding") == 1


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH"])
def test_body_methods_send_json(upstream, method):
    result = call(
        {"base_url": upstream.url, "endpoint": "/echo/{id}", "method": method.lower()},
        {"id": 7, "name": "Zoë", "nested": {"a": [1, 2]}},
    )
    assert result.ok, result.error_message
    seen = upstream.last
    assert seen.method == method
    assert seen.path == "/echo/7"
    assert seen.query == {}
    assert seen.json() == {"name": "Zoë", "nested": {"a": [1, 2]}}
    assert seen.headers["content-type"] == "application/json"


def test_delete_sends_query(upstream):
    assert call({"base_url": upstream.url + "/echo", "method": "DELETE"}, {"id": "9"}).ok
    assert upstream.last.method == "DELETE"
    assert upstream.last.query == {"id": ["9"]}
    assert upstream.last.body == b""


def test_head_request(upstream):
    result = call({"base_url": upstream.url + "/echo", "method": "HEAD"}, {"x": "1"})
    assert result.ok
    assert result.output["data"] is None
    assert upstream.last.method == "HEAD"
    assert upstream.last.query == {"x": ["1"]}


def test_form_body_when_static_content_type_says_so(upstream):
    result = call(
        {
            "base_url": upstream.url + "/form",
            "method": "POST",
            "headers": {"Content-Type": "application/x-www-form-urlencoded"},
        },
        {"name": "a b&c", "tags": ["x", "y"], "n": 1},
    )
    assert result.ok, result.error_message
    assert result.output["data"]["form"] == {"name": ["a b&c"], "tags": ["x", "y"], "n": ["1"]}
    assert upstream.last.headers["content-type"] == "application/x-www-form-urlencoded"


# --------------------------------------------------------------------------- auth


def test_bearer_token(upstream):
    assert call(
        {
            "base_url": upstream.url + "/echo",
            "auth_type": "bearer_token",
            "bearer_token": "tok-1234",
        }
    ).ok
    assert upstream.last.headers["authorization"] == "Bearer tok-1234"


@pytest.mark.parametrize(
    ("credentials", "sent"),
    [
        ({"api_key": "seed-key-1234"}, "seed-key-1234"),  # the seed's form
        ({"bearer_token": "tok-1234"}, "tok-1234"),  # the alias
        ({"api_key": "seed-key-1234", "bearer_token": "tok-1234"}, "tok-1234"),  # alias wins
        ({"api_key": "seed-key-1234", "bearer_token": ""}, "seed-key-1234"),  # unset alias
    ],
)
def test_a_bearer_token_auth_sends_the_api_key_config_as_the_seed_says(upstream, credentials, sent):
    result = call({"base_url": upstream.url + "/echo", "auth_type": "bearer_token", **credentials})
    assert result.ok, result.error_message
    assert upstream.last.headers["authorization"] == f"Bearer {sent}"
    assert "x-api-key" not in upstream.last.headers
    assert sent not in dump(result)  # the echoed header is redacted like any credential


def test_a_bearer_token_auth_without_a_token_names_the_seeds_config(upstream):
    result = call({"base_url": upstream.url + "/echo", "auth_type": "bearer_token"})
    assert result.error_type == ErrorType.CONFIG
    assert "'api_key'" in result.error_message and "'bearer_token'" in result.error_message
    assert upstream.requests == []


def test_api_key_default_and_custom_header(upstream):
    assert call(
        {"base_url": upstream.url + "/echo", "auth_type": "api_key", "api_key": "k-1234"}
    ).ok
    assert upstream.last.headers["x-api-key"] == "k-1234"
    assert call(
        {
            "base_url": upstream.url + "/echo",
            "auth_type": "api_key",
            "api_key": "k-5678",
            "api_key_header": "X-Custom-Key",
        }
    ).ok
    assert upstream.last.headers["x-custom-key"] == "k-5678"
    assert "x-api-key" not in upstream.last.headers


def test_basic_auth(upstream):
    assert call(
        {
            "base_url": upstream.url + "/echo",
            "auth_type": "basic_auth",
            "username": "user",
            "password": "pa:ss-word",
        }
    ).ok
    expected = base64.b64encode(b"user:pa:ss-word").decode()
    assert upstream.last.headers["authorization"] == f"Basic {expected}"


@pytest.mark.parametrize(
    "configs",
    [
        {"auth_type": "bearer_token"},
        {"auth_type": "api_key"},
        {"auth_type": "basic_auth", "username": "u"},
        {"auth_type": "basic_auth", "password": "p"},
        {"auth_type": "oauth_magic"},
    ],
)
def test_missing_credentials_are_config_errors(upstream, configs):
    result = call({"base_url": upstream.url + "/echo", **configs})
    assert not result.ok
    assert result.error_type == ErrorType.CONFIG
    assert result.retryable is False
    assert upstream.requests == []


def test_headers_input_map_plain_and_template(upstream):
    result = call(
        {
            "base_url": upstream.url + "/echo",
            "method": "POST",
            "headers_input_map": json.dumps(
                {
                    "user_token": {"header": "Authorization", "template": "Bearer {value}"},
                    "tenant": "X-Tenant",
                }
            ),
        },
        {"user_token": CANARY, "tenant": "acme-corp", "payload": 1},
    )
    assert result.ok, result.error_message
    seen = upstream.last
    assert seen.headers["authorization"] == f"Bearer {CANARY}"
    assert seen.headers["x-tenant"] == "acme-corp"
    assert seen.json() == {"payload": 1}  # mapped inputs are not in the body
    # The echo repeats the headers: the per-call secret is redacted from the output.
    assert CANARY not in dump(result)
    assert result.output["data"]["headers"]["authorization"] == "[REDACTED]"
    assert result.output["data"]["headers"]["x-tenant"] == "[REDACTED]"


def test_headers_input_map_value_with_newline_is_input_error(upstream):
    result = call(
        {"base_url": upstream.url + "/echo", "headers_input_map": {"tok": "X-Token"}},
        {"tok": "abc\r\nX-Injected: 1"},
    )
    assert result.error_type == ErrorType.INPUT
    assert upstream.requests == []


# --------------------------------------------------------------------------- redaction


@pytest.mark.parametrize(
    ("configs", "inputs", "header"),
    [
        ({"auth_type": "api_key", "api_key": CANARY}, {}, "X-API-Key"),
        ({"auth_type": "bearer_token", "bearer_token": CANARY}, {}, "Authorization"),
        (
            {"headers_input_map": {"user_token": "X-User-Token"}},
            {"user_token": CANARY},
            "X-User-Token",
        ),
        (
            {"headers_input_map": {"t": {"header": "Authorization", "template": "Token {value}"}}},
            {"t": CANARY},
            "Authorization",
        ),
        (
            {"auth_type": "basic_auth", "username": "svc", "password": CANARY},
            {},
            "Authorization",
        ),
    ],
)
def test_secret_echoed_in_error_body_is_redacted(upstream, configs, inputs, header):
    result = call(
        {"base_url": upstream.url, "endpoint": f"/echo-header/{header}", **configs}, inputs
    )
    assert not result.ok
    assert result.error_type == ErrorType.UPSTREAM
    assert result.upstream_status == 401
    assert "401" in result.error_message
    assert "invalid credential" in result.error_message
    assert "[REDACTED]" in result.error_message
    assert result.output["headers"]["x-echo"].endswith("[REDACTED]")
    serialized = dump(result)
    assert CANARY not in serialized
    assert base64.b64encode(f"svc:{CANARY}".encode()).decode() not in serialized


def test_a_secret_echoed_encoded_or_recased_is_redacted(upstream):
    """An upstream quoting the key as base64 (alone, in Basic-style user:key, inside a
    longer encoded text), upper case or URL-encoded gives none of it away."""
    result = call(
        {"base_url": upstream.url, "endpoint": "/echo-encoded/X-API-Key", "api_key": CANARY}
        | {"auth_type": "api_key"}
    )
    assert result.ok
    data = result.output["data"]
    assert set(data) == {"b64", "b64url_unpadded", "in_basic", "in_longer", "upper", "quoted"}
    serialized = dump(result)
    raw = CANARY.encode()
    for form in (
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        base64.b64encode(b"user:" + raw).decode(),
        base64.b64encode(b"xy" + raw + b"tail").decode(),
        CANARY.upper(),
    ):
        assert form not in serialized, form
    assert all("[REDACTED]" in value for value in data.values()), data


def test_call_secret_values_redacted_everywhere(upstream):
    result = call(
        {"base_url": upstream.url, "endpoint": "/echo/{key}"},
        {"key": CANARY, "q": CANARY},
        secrets=(CANARY,),
    )
    assert result.ok
    assert upstream.last.query == {"q": [CANARY]}  # it was sent...
    assert CANARY not in dump(result)  # ...but never appears in the result (metadata URL included)


def test_secret_cut_by_truncation_is_not_leaked_partially(upstream):
    body = "a" * 990 + CANARY + "tail"
    result = call(
        {"base_url": upstream.url + "/text"}, {"body": body}, max_bytes=1000, secrets=(CANARY,)
    )
    assert result.ok
    assert result.metadata["truncated"] is True
    data = result.output["data"]
    assert data.startswith("a" * 990)
    assert CANARY[:5] not in dump(result)


def test_error_excerpt_is_bounded(upstream):
    result = call({"base_url": upstream.url + "/status/500"}, {"body": "E" * 6000})
    assert result.error_type == ErrorType.UPSTREAM
    assert result.output["status_code"] == 500
    assert result.output["data"] == "E" * 6000
    assert len(result.error_message) < 2100
    assert "500" in result.error_message


# --------------------------------------------------------------------------- status codes and retryable


@pytest.mark.parametrize(
    ("status", "method", "retryable"),
    [
        (503, "GET", True),
        (503, "POST", False),
        (503, "PATCH", False),
        (503, "PUT", True),
        (503, "DELETE", True),
        (502, "GET", True),
        (504, "GET", True),
        (429, "GET", True),
        (429, "POST", False),
        (500, "GET", False),
        (404, "GET", False),
        (400, "PUT", False),
    ],
)
def test_upstream_errors_and_retryable(upstream, status, method, retryable):
    result = call({"base_url": upstream.url, "endpoint": f"/status/{status}", "method": method})
    assert result.ok is False
    assert result.error_type == ErrorType.UPSTREAM
    assert result.upstream_status == status
    assert result.retryable is retryable
    assert result.output["status_code"] == status
    assert result.output["data"]["status"] == status
    assert str(status) in result.error_message
    assert len(upstream.requests) == 1  # one attempt per execute()


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_seconds_in_metadata(upstream, status):
    result = call(
        {"base_url": upstream.url + f"/status/{status}", "query_params": {"retry_after": "7"}}
    )
    assert result.retryable is True
    assert result.metadata["retry_after"] == 7.0


def test_retry_after_http_date():
    future = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 <= http_module._retry_after(future) <= 31
    assert http_module._retry_after("garbage") is None
    assert http_module._retry_after("-5") == 0.0


def test_each_execute_is_one_attempt(upstream):
    configs = {"base_url": upstream.url + "/attempts/k1", "query_params": {"fail": "1"}}
    first = call(configs)
    assert first.retryable is True
    assert first.upstream_status == 503
    second = call(configs)
    assert second.ok
    assert second.output["data"] == {"attempt": 2}
    assert upstream.attempts["k1"] == 2


def test_redirect_final_3xx_without_location_is_ok(upstream):
    result = call({"base_url": upstream.url + "/status/304"})
    assert result.ok
    assert result.upstream_status == 304


# --------------------------------------------------------------------------- timeouts and connections


def test_timeout_get_is_retryable(upstream):
    started = time.monotonic()
    result = call({"base_url": upstream.url + "/slow/1.5"}, timeout=0.3)
    assert result.error_type == ErrorType.TIMEOUT
    assert result.retryable is True
    assert result.ok is False
    assert time.monotonic() - started < 1.2


def test_timeout_post_is_not_retryable(upstream):
    result = call({"base_url": upstream.url + "/slow/1.5", "method": "POST"}, timeout=0.3)
    assert result.error_type == ErrorType.TIMEOUT
    assert result.retryable is False


@pytest.mark.parametrize("value", [0.3, "0.3"])
def test_timeout_seconds_config_overrides_call(upstream, value):
    started = time.monotonic()
    result = call({"base_url": upstream.url + "/slow/1.5", "timeout_seconds": value}, timeout=10)
    assert result.error_type == ErrorType.TIMEOUT
    assert time.monotonic() - started < 1.2


def test_total_deadline_covers_a_slow_body(upstream):
    # Each chunk comes well within the timeout, the whole body does not.
    started = time.monotonic()
    result = call({"base_url": upstream.url + "/drip/20/0.05"}, timeout=0.4)
    assert result.error_type == ErrorType.TIMEOUT
    assert time.monotonic() - started < 0.9


def test_connection_refused_is_retryable_for_get():
    port = free_port()
    result = call({"base_url": f"http://127.0.0.1:{port}/x"}, timeout=0.5)
    assert result.error_type == ErrorType.CONNECTION
    assert result.retryable is True
    assert str(port) in result.error_message


def test_connection_refused_not_retryable_for_post():
    result = call({"base_url": f"http://127.0.0.1:{free_port()}/x", "method": "POST"}, timeout=0.5)
    assert result.error_type == ErrorType.CONNECTION
    assert result.retryable is False


def test_unresolvable_host_is_a_connection_error(monkeypatch):
    def fail(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", fail)
    result = call({"base_url": "http://nowhere.invalid/x"})
    assert result.error_type == ErrorType.CONNECTION
    assert result.retryable is True


# --------------------------------------------------------------------------- egress


def test_egress_closed_by_default(upstream, settings):
    settings.TOOLHUB_EGRESS_ALLOW = []
    result = call({"base_url": upstream.url + "/echo"})
    assert result.ok is False
    assert result.error_type == ErrorType.EGRESS_DENIED
    assert result.retryable is False
    assert "loopback" in result.error_message
    assert upstream.requests == []


@pytest.mark.parametrize(
    "base_url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:8080/",
        "http://2130706433/",
        "http://localhost./",
        "http://10.0.0.1/",
        "http://exa mple.com/",
        "http://a.example:99999/",
    ],
)
def test_egress_refusals(settings, base_url):
    settings.TOOLHUB_EGRESS_ALLOW = []
    result = call({"base_url": base_url})
    assert result.error_type == ErrorType.EGRESS_DENIED
    assert result.retryable is False


@pytest.mark.parametrize("base_url", ["ftp://example.com/x", "file:///etc/passwd"])
def test_unsupported_scheme_refused(base_url):
    result = call({"base_url": base_url})
    assert result.error_type == ErrorType.EGRESS_DENIED
    assert "scheme" in result.error_message


def test_name_is_pinned_to_the_checked_address(upstream, settings, monkeypatch):
    """The connection goes to the address the guard checked; the name is resolved once."""
    settings.TOOLHUB_EGRESS_ALLOW = ["127.0.0.1/32"]
    calls: list[str] = []

    def getaddrinfo(host, port, *args, **kwargs):
        if host == "upstream.test":
            calls.append(host)
            # A rebinding resolver: the first answer passes, any later one would not.
            address = "127.0.0.1" if len(calls) == 1 else "10.0.0.1"
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]
        return _real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    result = call({"base_url": f"http://upstream.test:{upstream.port}/echo"})
    assert result.ok, result.error_message
    assert upstream.last.headers["host"] == f"upstream.test:{upstream.port}"
    assert calls == ["upstream.test"]


def test_host_name_allowlist_entry(upstream, settings, monkeypatch):
    settings.TOOLHUB_EGRESS_ALLOW = ["api.internal.example"]

    def getaddrinfo(host, port, *args, **kwargs):
        if host == "api.internal.example":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        return _real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    assert call({"base_url": f"http://api.internal.example:{upstream.port}/echo"}).ok
    # The address itself is still closed.
    result = call({"base_url": f"http://127.0.0.1:{upstream.port}/echo"})
    assert result.error_type == ErrorType.EGRESS_DENIED


# --------------------------------------------------------------------------- redirects


def test_relative_redirect_followed(upstream):
    result = call(
        {"base_url": upstream.url + "/redirect", "query_params": {"to": "/echo/next?x=1"}}
    )
    assert result.ok, result.error_message
    assert result.output["data"]["path"] == "/echo/next"
    assert result.output["data"]["query"] == {"x": ["1"]}
    assert result.metadata["redirects"] == 1
    assert [r.path for r in upstream.requests] == ["/redirect", "/echo/next"]


def test_five_redirects_allowed_six_refused(upstream):
    ok = call({"base_url": upstream.url + "/redirect-chain/5"})
    assert ok.ok
    assert ok.metadata["redirects"] == 5
    upstream.reset()
    too_many = call({"base_url": upstream.url + "/redirect-chain/6"})
    assert too_many.ok is False
    assert too_many.error_type == ErrorType.UPSTREAM
    assert "too many redirects" in too_many.error_message
    assert too_many.retryable is False
    assert len(upstream.requests) == 6


def test_303_turns_post_into_get(upstream):
    result = call(
        {
            "base_url": upstream.url + "/redirect",
            "method": "POST",
            "query_params": {"to": "/echo/after", "status": "303"},
        },
        {"payload": "x"},
    )
    assert result.ok, result.error_message
    final = upstream.last
    assert final.method == "GET"
    assert final.body == b""
    assert "content-type" not in final.headers


def test_307_keeps_method_and_body(upstream):
    result = call(
        {
            "base_url": upstream.url + "/redirect",
            "method": "POST",
            "query_params": {"to": "/echo/after", "status": "307"},
        },
        {"payload": "x"},
    )
    assert result.ok, result.error_message
    assert upstream.last.method == "POST"
    assert upstream.last.json() == {"payload": "x"}


def test_cross_origin_redirect_drops_credentials(upstream, upstream2):
    result = call(
        {
            "base_url": upstream.url + "/redirect",
            "query_params": {"to": upstream2.url + "/echo/other"},
            "auth_type": "bearer_token",
            "bearer_token": CANARY,
            "headers": {"X-Static": "kept"},
            "headers_input_map": {"tok": "X-User-Token"},
        },
        {"tok": "user-token-value"},
    )
    assert result.ok, result.error_message
    first, final = upstream.requests[0], upstream2.last
    assert first.headers["authorization"] == f"Bearer {CANARY}"
    assert first.headers["x-user-token"] == "user-token-value"
    assert final.path == "/echo/other"
    assert "authorization" not in final.headers
    assert "x-user-token" not in final.headers
    assert final.headers["x-static"] == "kept"


def test_same_origin_redirect_keeps_credentials(upstream):
    result = call(
        {
            "base_url": upstream.url + "/redirect",
            "query_params": {"to": "/echo/same"},
            "auth_type": "api_key",
            "api_key": "same-origin-key",
        }
    )
    assert result.ok
    assert upstream.last.headers["x-api-key"] == "same-origin-key"


@pytest.mark.parametrize(
    "location",
    [
        "http://127.0.0.2:{port}/echo",
        "http://[::1]:{port}/echo",
        "http://169.254.169.254/latest/meta-data/",
        "http://0x7f000002:{port}/echo",
        "http://10.0.0.5/",
        "ftp://127.0.0.1/file",
    ],
)
def test_redirect_to_refused_destination(upstream, upstream2, location):
    # Only 127.0.0.1/32 is allowed: a redirect elsewhere is checked again and refused.
    result = call(
        {
            "base_url": upstream.url + "/redirect",
            "query_params": {"to": location.format(port=upstream2.port)},
        }
    )
    assert result.ok is False
    assert result.error_type == ErrorType.EGRESS_DENIED
    assert result.retryable is False
    assert "redirect" in result.error_message
    assert len(upstream.requests) == 1
    assert upstream2.requests == []


def test_redirect_to_localhost_name_not_allowed_by_cidr_when_it_resolves_elsewhere(
    upstream, monkeypatch
):
    def getaddrinfo(host, port, *args, **kwargs):
        if host == "localhost":
            return [
                (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::1", port, 0, 0)),
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port)),
            ]
        return _real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    result = call(
        {
            "base_url": upstream.url + "/redirect",
            "query_params": {"to": f"http://localhost:{upstream.port}/echo"},
        }
    )
    assert result.error_type == ErrorType.EGRESS_DENIED
    assert "::1" in result.error_message
    assert len(upstream.requests) == 1


# --------------------------------------------------------------------------- responses


def test_text_response(upstream):
    result = call({"base_url": upstream.url + "/text"})
    assert result.ok
    assert result.output["data"] == "plain text body"
    assert result.metadata["content_type"].startswith("text/plain")


def test_json_looking_text_is_parsed(upstream):
    result = call({"base_url": upstream.url + "/json-as-text"})
    assert result.output["data"] == {"looks": "like json", "n": 1}


def test_set_cookie_dropped_other_headers_kept(upstream):
    result = call({"base_url": upstream.url + "/cookie"})
    assert result.ok
    assert "set-cookie" not in result.output["headers"]
    assert result.output["headers"]["x-kept"] == "yes"
    assert "abc123" not in dump(result)


def test_a_cookie_set_by_one_call_is_never_sent_by_the_next(upstream):
    # The pooled client is shared by every tool and caller of the process: a
    # session cookie one upstream answer sets must not ride along later calls.
    assert call({"base_url": upstream.url + "/cookie"}).ok
    assert call({"base_url": upstream.url + "/echo"}).ok
    assert "cookie" not in upstream.last.headers
    assert all("abc123" not in str(r.headers) for r in upstream.requests)


def test_no_content(upstream):
    result = call({"base_url": upstream.url + "/empty", "method": "DELETE"})
    assert result.ok
    assert result.output["status_code"] == 204
    assert result.output["data"] is None


def test_large_body_truncated_with_known_size(upstream):
    result = call(
        {"base_url": upstream.url + "/large", "query_params": {"size": "5000"}}, max_bytes=1000
    )
    assert result.ok
    assert result.metadata["truncated"] is True
    assert result.metadata["full_size"] == 5000
    assert result.metadata["response_bytes"] == 1000
    assert result.output["data"] == "x" * 1000


def test_a_truncated_text_body_is_not_marked_as_encoded(upstream):
    """``data_encoding`` says ``data`` is base64; a cut text body is plain text."""
    result = call(
        {"base_url": upstream.url + "/large", "query_params": {"size": "5000"}}, max_bytes=1000
    )
    assert result.metadata["truncated"] is True
    assert "data_encoding" not in result.output


def test_large_chunked_body_truncated_without_size(upstream):
    started = time.monotonic()
    result = call(
        {
            "base_url": upstream.url + "/large",
            "query_params": {"size": str(50 * 1024 * 1024), "chunked": "1"},
        },
        max_bytes=10_000,
    )
    assert result.ok
    assert result.metadata["truncated"] is True
    assert "full_size" not in result.metadata
    assert len(result.output["data"]) == 10_000
    assert time.monotonic() - started < 2


def test_body_at_exactly_the_limit_is_not_truncated(upstream):
    result = call(
        {"base_url": upstream.url + "/large", "query_params": {"size": "1000"}}, max_bytes=1000
    )
    assert result.metadata["truncated"] is False
    assert len(result.output["data"]) == 1000


def test_pathologically_nested_json_falls_back_to_text(upstream):
    result = call({"base_url": upstream.url + "/nested"})
    assert result.ok
    assert isinstance(result.output["data"], str)


def test_url_credentials_are_used_and_redacted(upstream):
    result = call({"base_url": f"http://svc:pw-secret-123@127.0.0.1:{upstream.port}/echo"})
    assert result.ok, result.error_message
    sent = base64.b64encode(b"svc:pw-secret-123").decode()
    assert upstream.last.headers["authorization"] == f"Basic {sent}"
    serialized = dump(result)
    assert "pw-secret-123" not in serialized
    assert sent not in serialized
    assert result.metadata["url"] == f"http://127.0.0.1:{upstream.port}/echo"


# --------------------------------------------------------------------------- configuration errors


@pytest.mark.parametrize(
    ("configs", "error_type", "fragment"),
    [
        ({"base_url": None}, ErrorType.CONFIG, "base_url"),
        ({"base_url": "http://{host}/x"}, ErrorType.INPUT, "host"),
        ({"headers": "{not json"}, ErrorType.CONFIG, "headers"),
        ({"headers": "[1, 2]"}, ErrorType.CONFIG, "headers"),
        ({"headers": {"X-A": "line\r\nbreak"}}, ErrorType.CONFIG, "line break"),
        ({"query_params": "nope"}, ErrorType.CONFIG, "query_params"),
        ({"headers_input_map": {"x": {"header": "Bad Header"}}}, ErrorType.CONFIG, "header name"),
        (
            {"api_key_header": "Bad:Name", "auth_type": "api_key", "api_key": "k-1234"},
            ErrorType.CONFIG,
            "header name",
        ),
        ({"method": "TRACE"}, ErrorType.CONFIG, "TRACE"),
        ({"headers": {"X-A": "naïve"}}, ErrorType.CONFIG, "ASCII"),
        ({"timeout_seconds": "soon"}, ErrorType.CONFIG, "timeout_seconds"),
        ({"timeout_seconds": -1}, ErrorType.CONFIG, "timeout_seconds"),
        ({"base_url": "no-scheme.example/path"}, ErrorType.CONFIG, "absolute"),
        ({"base_url": "http://a.example:port/"}, ErrorType.CONFIG, "invalid URL"),
    ],
)
def test_configuration_errors(upstream, configs, error_type, fragment):
    result = call({"base_url": upstream.url + "/echo", **configs})
    assert result.ok is False
    assert result.error_type == error_type
    assert result.retryable is False
    assert fragment.lower() in result.error_message.lower()
    assert upstream.requests == []


# --------------------------------------------------------------------------- the shared client


def test_one_pool_reused_across_calls(upstream):
    transport = get_transport()
    assert call({"base_url": upstream.url + "/echo"}).ok
    assert call({"base_url": upstream.url + "/echo"}).ok
    assert get_transport() is transport
    # Both calls went over the same kept-alive connection: pinning does not defeat the pool.
    first, second = upstream.requests
    assert first.client_port == second.client_port


def test_concurrent_calls_run_in_parallel(upstream):
    results: list[ExecutorResult] = []
    lock = threading.Lock()

    def worker():
        result = call({"base_url": upstream.url + "/slow/0.3"})
        with lock:
            results.append(result)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8
    assert all(r.ok for r in results)
    assert upstream.max_in_flight >= 4
    assert time.monotonic() - started < 2


def test_pool_is_recreated_after_close(upstream):
    first = get_transport()
    http_module.close_transport()
    second = get_transport()
    assert second is not first
    assert call({"base_url": upstream.url + "/echo"}).ok


def test_egress_module_is_the_guard_used(upstream, monkeypatch):
    seen: list[tuple[str, int]] = []
    original = egress.check_host

    def spy(host, port):
        seen.append((host, port))
        return original(host, port)

    monkeypatch.setattr(egress, "check_host", spy)
    assert call({"base_url": upstream.url + "/redirect", "query_params": {"to": "/echo"}}).ok
    assert seen == [("127.0.0.1", upstream.port)] * 2  # every hop checked


def test_a_binary_body_is_kept_whole_as_base64(upstream):
    import base64

    result = call({"base_url": upstream.url + "/binary"})
    assert result.ok and result.output["data_encoding"] == "base64"
    assert base64.b64decode(result.output["data"]) == bytes(range(256)) * 4
    # Text stays text; a binary body holding a secret stays text too, and redacted.
    assert "data_encoding" not in call({"base_url": upstream.url + "/text"}).output
    leaking = call(
        {"base_url": upstream.url + "/binary", "query_params": {"with": "sk-binary-secret-42"}},
        secrets=("sk-binary-secret-42",),
    )
    assert "data_encoding" not in leaking.output
    assert "sk-binary-secret-42" not in dump(leaking)


def test_an_invalid_idna_host_is_refused_at_save_and_never_crashes_a_call(settings):
    from executions.executors.http import CONFIGS

    bad = "http://xn--localhost-:8112"
    problem = CONFIGS.problem("base_url", bad)
    assert problem and "invalid host name" in problem
    # Stored before the check: the call fails plainly, with no traceback.
    settings.TOOLHUB_EGRESS_ALLOW = ["xn--localhost-"]
    result = call({"base_url": bad})
    assert not result.ok
    assert result.error_type != ErrorType.TOOL and "Traceback" not in result.error_message
    assert "IDNAError" not in result.error_message


@pytest.mark.parametrize("value", ["..", ".", " .. "])
def test_a_path_argument_never_walks_the_upstreams_tree(upstream, value):
    result = call({"base_url": upstream.url, "endpoint": "/items/{id}/detail"}, {"id": value})
    assert result.error_type == ErrorType.INPUT and "may not be" in result.error_message
    assert upstream.requests == []
