"""The MCP client layer and executor against real MCP servers (stdio, SSE, streamable HTTP)."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from executions import mcp_client
from executions.executors.base import ErrorType, ToolCall
from executions.executors.mcp import MCPExecutor
from executions.mcp_client import MCPConfigError, MCPServerSpec
from tests.executions.boundary import run_at_the_boundary
from tests.servers.mcp_server import PIXEL_PNG

SERVER_SCRIPT = Path(__file__).resolve().parents[1] / "servers" / "mcp_server.py"
TOKEN = f"canary-{uuid.uuid4().hex}"
ALL_TOOLS = {
    "add",
    "move",
    "steps",
    "chatty",
    "echo",
    "fail",
    "slow",
    "whoami",
    "structured",
    "json_text",
    "media",
    "resource_text",
    "big_image",
    "bad_structured",
    "rpc_error",
    "trace_context",
}


def allow_all(url: str) -> None:
    return None


# --------------------------------------------------------------------------- helpers


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the test MCP server exited early ({proc.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the test MCP server did not listen on {port}")


class ServerProcess:
    def __init__(self, transport: str, *extra: str, port: int | None = None):
        self.transport = transport
        self.extra = extra
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None
        path = "sse" if transport == "sse" else "mcp"
        self.url = f"http://127.0.0.1:{self.port}/{path}"

    def start(self) -> ServerProcess:
        cmd = [sys.executable, str(SERVER_SCRIPT), "--transport", self.transport]
        cmd += ["--port", str(self.port), *self.extra]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port, self.proc)
        return self

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None


def child_processes() -> dict[int, str]:
    """Direct children of this process (pid -> state letter), read from /proc."""
    children: dict[int, str] = {}
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == me:
            children[int(entry)] = fields[0]
    return children


def make_call(server: dict, tool: str, inputs: dict | None = None, **kw) -> ToolCall:
    configs = {"server": server}
    if "remote_tool_name" not in kw:
        configs["remote_tool_name"] = tool
    else:
        remote = kw.pop("remote_tool_name")
        if remote is not None:
            configs["remote_tool_name"] = remote
    return ToolCall(
        tool_name=kw.pop("tool_name", f"{server.get('name', 'srv')}__{tool}"),
        tool_type="mcp",
        configs=configs,
        inputs=inputs or {},
        timeout_seconds=kw.pop("timeout_seconds", 10.0),
        **kw,
    )


def run(server: dict, tool: str, inputs: dict | None = None, **kw):
    """The call as the pipeline sees it: the executor's answer, redacted by the runner's
    one redaction of the call's secrets (the server's token and environment included)."""
    return run_at_the_boundary(
        MCPExecutor(egress_check=allow_all), make_call(server, tool, inputs, **kw)
    )


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module", autouse=True)
def _clean_runtime() -> Iterator[None]:
    mcp_client.shutdown()
    yield
    mcp_client.shutdown()


@pytest.fixture(scope="module")
def http_server() -> Iterator[ServerProcess]:
    server = ServerProcess("streamable-http", "--token", TOKEN, "--page-size", "3").start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def sse_server() -> Iterator[ServerProcess]:
    server = ServerProcess("sse", "--token", TOKEN).start()
    yield server
    server.stop()


@pytest.fixture
def stdio_allowed(settings) -> None:
    settings.TOOLHUB_MCP_STDIO_COMMANDS = [sys.executable]


@pytest.fixture
def http_spec(http_server: ServerProcess) -> dict:
    return {
        "name": "web",
        "transport": "streamable_http",
        "url": http_server.url,
        "auth_token": TOKEN,
        "timeout_seconds": 10,
    }


@pytest.fixture
def sse_spec(sse_server: ServerProcess) -> dict:
    return {
        "name": "legacy",
        "transport": "sse",
        "url": sse_server.url,
        "auth_token": TOKEN,
        "timeout_seconds": 10,
    }


@pytest.fixture
def stdio_spec(stdio_allowed) -> dict:
    return {
        "name": "local",
        "transport": "stdio",
        "command": sys.executable,
        "args": [str(SERVER_SCRIPT), "--transport", "stdio"],
        "timeout_seconds": 20,
    }


@pytest.fixture(params=["streamable_http", "sse", "stdio"])
def any_spec(request) -> dict:
    name = {"streamable_http": "http_spec", "sse": "sse_spec", "stdio": "stdio_spec"}[request.param]
    return request.getfixturevalue(name)


# --------------------------------------------------------------------------- tools/list


def test_list_tools_on_every_transport(any_spec):
    tools = mcp_client.list_tools(any_spec, egress_check=allow_all)
    by_name = {t["name"]: t for t in tools}
    assert set(by_name) == ALL_TOOLS  # the HTTP server pages 3 by 3: cursors are followed
    assert len(tools) == len(ALL_TOOLS)
    add = by_name["add"]
    assert add["description"] == "Add two integers."
    assert set(add["input_schema"]["properties"]) == {"a", "b"}


# --------------------------------------------------------------------------- tools/call


def test_call_add_echo_structured(any_spec):
    result = run(any_spec, "add", {"a": 2, "b": 40})
    assert result.ok, result.error_message
    # The server's result as it gave it, in MCP's own form: nothing added, nothing renamed.
    assert result.output == {
        "content": [{"type": "text", "text": "42"}],
        "structuredContent": {"result": 42},
    }
    assert result.metadata["transport"] == any_spec["transport"]
    assert result.latency_ms > 0

    result = run(any_spec, "echo", {"text": "héllo wörld"})
    assert result.ok and result.output["content"] == [{"type": "text", "text": "héllo wörld"}]

    result = run(any_spec, "structured")
    assert result.ok
    assert result.output["structuredContent"] == {
        "answer": 42,
        "items": ["a", "b"],
        "nested": {"ok": True},
    }


def test_is_error_becomes_failed_result(any_spec):
    result = run(any_spec, "fail", {"message": "the widget broke"})
    assert not result.ok
    assert result.error_type == ErrorType.UPSTREAM
    assert "the widget broke" in result.error_message
    assert result.retryable is False
    assert result.output == {
        "content": [{"type": "text", "text": "Error executing tool fail: the widget broke"}],
        "isError": True,
    }


def test_content_blocks_are_kept_as_the_server_gave_them(http_spec):
    outcome = mcp_client.call_tool(http_spec, "media", {}, 10, egress_check=allow_all)
    assert not outcome.is_error
    text, image, resource = outcome.content
    assert text == {"type": "text", "text": "a pixel"}
    assert image == {"type": "image", "data": PIXEL_PNG, "mimeType": "image/png"}
    assert resource == {
        "type": "resource",
        "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "resource text"},
    }
    annotated = mcp_client.call_tool(
        http_spec, "resource_text", {"text": "memo"}, 10, egress_check=allow_all
    )
    assert annotated.content == [
        {
            "type": "resource",
            "resource": {"uri": "memo://1", "mimeType": "text/plain", "text": "memo"},
            "annotations": {"audience": ["user"], "priority": 0.5},
        }
    ]
    # Text that parses as JSON stays the text it was.
    outcome = mcp_client.call_tool(http_spec, "json_text", {}, 10, egress_check=allow_all)
    assert outcome.content == [
        {"type": "text", "text": json.dumps({"kind": "json", "values": [1, 2, 3]})}
    ]


def test_a_large_binary_block_is_kept_whole(http_spec):
    """Binary content is not summarised away: the runner keeps an output past the tool's
    cap as an artifact, and /mcp links the blocks that do not fit."""
    outcome = mcp_client.call_tool(
        http_spec, "big_image", {"size": 300_000}, 10, egress_check=allow_all
    )
    data = base64.b64decode(outcome.content[1]["data"])
    assert len(data) == 300_000 and data[:3] == bytes([0, 1, 2])


def test_an_output_past_the_artifact_cap_fails_the_call(http_spec, settings):
    settings.TOOLHUB_MAX_ARTIFACT_BYTES = 50_000
    result = run(http_spec, "big_image", {"size": 60_000})
    assert not result.ok and result.error_type == ErrorType.UPSTREAM
    assert "TOOLHUB_MAX_ARTIFACT_BYTES" in result.error_message


def test_a_secret_inside_an_embedded_resource_is_redacted(http_spec):
    secret = f"s3cret-{uuid.uuid4().hex}"
    result = run(http_spec, "resource_text", {"text": f"key={secret}"}, secret_values=(secret,))
    assert result.ok
    assert secret not in json.dumps(result.output)
    assert result.output["content"][0]["resource"]["text"] == "key=[REDACTED]"


def test_unknown_tool_fails(http_spec):
    result = run(http_spec, "does_not_exist")
    assert not result.ok
    assert result.error_type == ErrorType.UPSTREAM
    assert "does_not_exist" in result.error_message


def test_structured_content_breaking_the_output_schema_is_upstream_error(http_spec):
    before = mcp_client.stats()
    result = run(http_spec, "bad_structured")
    assert not result.ok
    assert result.error_type == ErrorType.UPSTREAM
    assert result.retryable is False
    assert "bad_structured" in result.error_message
    after = mcp_client.stats()
    assert after["sessions_discarded"] == before["sessions_discarded"]  # the session is fine


def test_the_output_schema_is_checked_on_a_fresh_session_for_a_tool_on_a_later_page(http_spec):
    """The test server lists three tools a page; bad_structured is on a later one.
    A session that never listed it must still hold its result to its schema."""
    mcp_client.shutdown()  # no cached session: the next call opens one
    result = run(http_spec, "bad_structured")
    assert not result.ok
    assert result.error_type == ErrorType.UPSTREAM
    assert result.metadata.get("session_reused") is not True
    assert "bad_structured" in result.error_message


def test_a_tool_without_remote_tool_name_calls_nothing_rather_than_its_own_name(http_spec):
    # Named like a tool of the server, but which remote tool runs is never derived.
    result = run(http_spec, "echo", {"text": "x"}, remote_tool_name=None, tool_name="web__echo")
    assert not result.ok and result.error_type == ErrorType.CONFIG
    assert "remote_tool_name" in result.error_message
    assert "remote_tool" not in result.metadata


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize("spec_name", ["http_spec", "stdio_spec"])
def test_slow_tool_times_out(request, spec_name):
    spec = request.getfixturevalue(spec_name)
    started = time.monotonic()
    # The tool would take 30 s; the call ends at its 0.5 s timeout. The bound leaves room
    # for starting a stdio server on a busy machine, and is still half the tool's time.
    result = run(spec, "slow", {"seconds": 30}, timeout_seconds=0.5)
    assert not result.ok
    assert result.error_type == ErrorType.TIMEOUT
    assert result.retryable is True
    assert time.monotonic() - started < 15


@pytest.mark.parametrize("transport,path", [("streamable_http", "mcp"), ("sse", "sse")])
def test_server_down_is_retryable_connection_error(transport, path):
    server = {
        "name": "gone",
        "transport": transport,
        "url": f"http://127.0.0.1:{free_port()}/{path}",
        "auth_token": TOKEN,
        "timeout_seconds": 5,
    }
    result = run(server, "add", {"a": 1, "b": 2})
    assert not result.ok
    assert result.error_type == ErrorType.CONNECTION
    assert result.retryable is True
    assert TOKEN not in result.error_message


@pytest.mark.parametrize("allowed", [[], ["node"], ["/usr/local/bin/python-other"]])
def test_stdio_command_not_allowlisted(settings, allowed):
    settings.TOOLHUB_MCP_STDIO_COMMANDS = allowed
    server = {"transport": "stdio", "command": sys.executable, "args": [str(SERVER_SCRIPT)]}
    result = run(server, "add", {"a": 1, "b": 2})
    assert not result.ok
    assert result.error_type == ErrorType.CONFIG
    assert "TOOLHUB_MCP_STDIO_COMMANDS" in result.error_message
    with pytest.raises(MCPConfigError):
        mcp_client.list_tools(server)


def test_stdio_allowlist_matches_basename_only_for_bare_commands(settings):
    settings.TOOLHUB_MCP_STDIO_COMMANDS = ["python3"]
    mcp_client.check_stdio_command("python3")
    with pytest.raises(MCPConfigError):
        mcp_client.check_stdio_command("/opt/elsewhere/python3")
    settings.TOOLHUB_MCP_STDIO_COMMANDS = [sys.executable]
    mcp_client.check_stdio_command(sys.executable)


def test_stdio_process_that_dies_is_a_connection_error(stdio_spec):
    server = {
        **stdio_spec,
        "args": ["-c", "import sys; sys.stderr.write('cannot start'); sys.exit(3)"],
    }
    result = run(server, "add", {"a": 1, "b": 2})
    assert not result.ok
    assert result.error_type == ErrorType.CONNECTION
    assert result.retryable is True
    assert "cannot start" in result.error_message


def test_an_allow_list_entry_with_arguments_pins_them(settings, tmp_path):
    """'python server.py' allows that server, not 'python -c <anything>'."""
    marker = str(tmp_path / "should-not-exist")
    settings.TOOLHUB_MCP_STDIO_COMMANDS = [f"{sys.executable} {SERVER_SCRIPT}"]
    mcp_client.check_stdio_command(sys.executable, [str(SERVER_SCRIPT), "--transport", "stdio"])
    for args in (["-c", "import os"], [], ["-m", "http.server"]):
        with pytest.raises(mcp_client.MCPConfigError, match="TOOLHUB_MCP_STDIO_COMMANDS"):
            mcp_client.check_stdio_command(sys.executable, args)
    server = {
        "transport": "stdio",
        "command": sys.executable,
        "args": ["-c", f"open({marker!r}, 'w')"],
    }
    result = run(server, "add", {"a": 1, "b": 2})
    assert result.error_type == ErrorType.CONFIG and "not allowed" in result.error_message
    assert not os.path.exists(marker)


@pytest.mark.parametrize(
    "name",
    [
        "PYTHONPATH",
        "LD_PRELOAD",
        "NODE_OPTIONS",
        "PATH",
        "pythonstartup",
        "npm_config_node_options",
        "OPENSSL_CONF",
        "UNLISTED_SETTING",
    ],
)
def test_environment_that_runs_other_code_is_refused(stdio_spec, name):
    result = run({**stdio_spec, "env": {name: "/srv/evil"}}, "add", {"a": 1, "b": 2})
    assert result.error_type == ErrorType.CONFIG and name in result.error_message


def test_environment_values_never_reach_an_error(stdio_spec):
    """A server that complains on stderr with its key: the stored env value is redacted."""
    key = "sk-live-ENV-CANARY-7731"
    server = {
        **stdio_spec,
        "env": {"VENDOR_KEY": key, "LOG_LEVEL": "debug"},
        "args": [
            "-c",
            "import os, sys; sys.stderr.write('auth failed with ' + os.environ['VENDOR_KEY'] "
            "+ ' at ' + os.environ['LOG_LEVEL']); sys.exit(3)",
        ],
    }
    result = run(server, "add", {"a": 1, "b": 2})
    assert not result.ok and "auth failed with" in result.error_message
    assert key not in result.error_message and "[REDACTED]" in result.error_message
    assert "at debug" in result.error_message  # short settings are left alone


def test_invalid_server_configs_are_config_errors():
    for server in (
        None,
        {"transport": "carrier-pigeon", "url": "http://127.0.0.1:1/mcp"},
        {"transport": "streamable_http"},
        {"transport": "sse", "url": "ftp://127.0.0.1/sse"},
        {"transport": "streamable_http", "url": "http://user:pw@127.0.0.1/mcp"},
        {"transport": "stdio"},
        {"transport": "stdio", "command": "x", "args": "not-a-list"},
    ):
        result = MCPExecutor(egress_check=allow_all).execute(
            ToolCall(
                tool_name="t",
                tool_type="mcp",
                configs={"server": server, "remote_tool_name": "add"},
                inputs={},
                timeout_seconds=1,
            )
        )
        assert result.error_type == ErrorType.CONFIG, server


def test_egress_check_sees_the_url_and_can_deny(http_spec):
    seen = []

    def deny(url: str) -> None:
        seen.append(url)
        raise RuntimeError("destination not allowed")

    call = make_call(http_spec, "add", {"a": 1, "b": 2})
    result = MCPExecutor(egress_check=deny).execute(call)
    assert seen == [http_spec["url"]]
    assert not result.ok
    assert result.error_type == ErrorType.EGRESS_DENIED
    assert "destination not allowed" in result.error_message


def test_default_egress_check_guards_loopback(settings, http_spec):
    pytest.importorskip("executions.egress")
    settings.TOOLHUB_EGRESS_ALLOW = []
    denied = MCPExecutor().execute(make_call(http_spec, "add", {"a": 1, "b": 2}))
    assert denied.error_type == ErrorType.EGRESS_DENIED

    settings.TOOLHUB_EGRESS_ALLOW = ["127.0.0.1/32"]
    allowed = MCPExecutor().execute(make_call(http_spec, "add", {"a": 1, "b": 2}))
    assert allowed.ok, allowed.error_message


# --------------------------------------------------------------------------- sessions & processes


@pytest.mark.parametrize("spec_name", ["http_spec", "sse_spec"])
def test_http_session_is_reused(request, spec_name):
    spec = request.getfixturevalue(spec_name)
    mcp_client.shutdown()
    assert mcp_client.stats()["sessions_opened"] == 0

    first = run(spec, "add", {"a": 1, "b": 1})
    second = run(spec, "echo", {"text": "again"})
    tools = mcp_client.list_tools(spec, egress_check=allow_all)

    assert first.ok and second.ok and tools
    stats = mcp_client.stats()
    assert stats["sessions_opened"] == 1
    assert stats["sessions_reused"] == 2
    assert stats["sessions_open"] == 1
    assert first.metadata["session_reused"] is False
    assert second.metadata["session_reused"] is True


@pytest.mark.parametrize("spec_name", ["http_spec", "sse_spec"])
def test_idle_session_is_checked_then_reused(request, monkeypatch, spec_name):
    spec = request.getfixturevalue(spec_name)
    monkeypatch.setattr(mcp_client.runtime, "PING_AFTER_IDLE_SECONDS", 0.0)
    mcp_client.shutdown()
    assert run(spec, "add", {"a": 1, "b": 1}).ok
    assert run(spec, "add", {"a": 1, "b": 2}).ok
    assert mcp_client.stats()["sessions_opened"] == 1


def test_concurrent_calls_share_one_session(http_spec):
    mcp_client.shutdown()
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda i: run(http_spec, "add", {"a": i, "b": 1}), range(16)))
    assert [r.output["content"][0]["text"] for r in results] == [str(i + 1) for i in range(16)]
    assert mcp_client.stats()["sessions_opened"] == 1


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
def test_stale_session_is_replaced_after_server_restart(transport):
    server = ServerProcess(transport).start()
    spec = {"transport": transport.replace("-", "_"), "url": server.url, "timeout_seconds": 5}
    try:
        assert run(spec, "add", {"a": 1, "b": 2}).ok
        server.stop()
        down = run(spec, "add", {"a": 1, "b": 2})
        assert down.error_type == ErrorType.CONNECTION and down.retryable
        server.start()
        again = run(spec, "add", {"a": 2, "b": 2})
        assert again.ok, again.error_message
        assert again.output["content"][0]["text"] == "4"
    finally:
        server.stop()


def test_no_zombie_processes_after_stdio_calls(stdio_spec, http_server, sse_server):
    known = {http_server.pid, sse_server.pid}
    before = set(child_processes()) - known

    assert run(stdio_spec, "add", {"a": 1, "b": 2}).ok
    assert not run(stdio_spec, "fail", {"message": "x"}).ok
    assert (
        run(stdio_spec, "slow", {"seconds": 5}, timeout_seconds=0.3).error_type == ErrorType.TIMEOUT
    )
    assert mcp_client.stats()["stdio_processes_started"] >= 3

    deadline = time.monotonic() + 5
    leftover = {}
    while time.monotonic() < deadline:
        leftover = {
            p: s for p, s in child_processes().items() if p not in known and p not in before
        }
        if not leftover:
            break
        time.sleep(0.05)
    assert leftover == {}, f"stdio server processes left behind (pid: state): {leftover}"


def test_shutdown_closes_sessions_and_is_idempotent(http_spec):
    assert run(http_spec, "add", {"a": 1, "b": 1}).ok
    assert mcp_client.stats()["sessions_open"] >= 1
    mcp_client.shutdown()
    mcp_client.shutdown()
    assert mcp_client.stats()["sessions_open"] == 0
    assert run(http_spec, "add", {"a": 1, "b": 1}).ok  # the runtime restarts on demand


# --------------------------------------------------------------------------- secrets


@pytest.mark.parametrize("spec_name", ["http_spec", "sse_spec"])
def test_bearer_token_is_sent_and_never_surfaces(request, spec_name):
    http_spec = request.getfixturevalue(spec_name)
    result = run(http_spec, "whoami")
    assert result.ok, result.error_message
    # The server saw the header (it echoes it back), and the executor redacted the token.
    assert result.output["content"] == [{"type": "text", "text": "Bearer [REDACTED]"}]
    blob = json.dumps([result.output, result.metadata, result.error_message])
    assert TOKEN not in blob

    spec = MCPServerSpec.from_mapping(http_spec)
    assert TOKEN not in repr(spec)


@pytest.mark.parametrize("spec_name", ["http_spec", "sse_spec"])
def test_wrong_token_is_rejected_without_leaking_it(request, spec_name):
    http_spec = request.getfixturevalue(spec_name)
    wrong = f"wrong-{uuid.uuid4().hex}"
    result = run({**http_spec, "auth_token": wrong}, "add", {"a": 1, "b": 2})
    assert not result.ok
    assert result.error_type == ErrorType.UPSTREAM
    assert result.upstream_status == 401
    assert result.retryable is False
    assert wrong not in json.dumps([result.output, result.metadata, result.error_message])


def test_secret_values_are_redacted_from_outputs_and_messages(any_spec):
    secret = f"s3cret-{uuid.uuid4().hex}"
    ok = run(any_spec, "echo", {"text": f"value={secret}"}, secret_values=(secret,))
    assert ok.ok
    failed = run(any_spec, "fail", {"message": f"bad {secret}"}, secret_values=(secret,))
    assert not failed.ok
    for result in (ok, failed):
        assert secret not in json.dumps([result.output, result.metadata, result.error_message])
    assert "[REDACTED]" in ok.output["content"][0]["text"]
    assert "[REDACTED]" in failed.error_message


@pytest.mark.parametrize("spec_name", ["http_spec", "stdio_spec"])
@pytest.mark.parametrize("code", [-32000, -32001, -32050])
def test_a_json_rpc_error_answer_is_the_servers_error_not_a_lost_connection(
    request, spec_name, code
):
    """-32000 and -32001 are also the codes the SDK gives a closed connection and its
    own timeout: a server's error with them had read as 'connection closed'."""
    result = run(request.getfixturevalue(spec_name), "rpc_error", {"code": code})
    assert result.error_type == ErrorType.UPSTREAM, (result.error_type, result.error_message)
    assert "quota exhausted for this key" in result.error_message
    # The session is still usable afterwards.
    assert run(request.getfixturevalue(spec_name), "add", {"a": 1, "b": 2}).ok


@pytest.mark.parametrize(
    ("code", "message", "kind"),
    [
        (-32000, "Connection closed", "connection"),
        (-32000, "SSE stream failed: ReadError", "connection"),
        (-32000, "SSE stream ended and reconnection attempts were exhausted", "connection"),
        (-32001, "Request 'tools/call' timed out", "timeout"),
        (-32000, "quota exhausted for this key", "server"),
        (-32001, "upstream busy", "server"),
    ],
)
def test_the_sdks_own_failures_stay_transport_failures(code, message, kind):
    from mcp.shared.exceptions import MCPError

    error = mcp_client._translate(MCPError(code=code, message=message), phase="request")
    expected = {
        "connection": mcp_client.MCPConnectionError,
        "timeout": mcp_client.MCPTimeout,
        "server": mcp_client.MCPToolError,
    }[kind]
    assert type(error) is expected, (message, error)
