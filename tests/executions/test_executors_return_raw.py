"""Executors redact nothing; the runner's one redaction does, with every secret of the call.

Each executor kind, called directly with a secret it is told of, answers with the
secret as the tool gave it (in its output and in its error message). The runner's
``CallSecrets`` then removes it, in every form, with those the executor reports
it resolved, and keeps a database's login name out of messages only.
"""

from __future__ import annotations

import base64
import json
import sqlite3
import sys
import uuid

import pytest

from executions.executors.base import ExecutorResult, ToolCall
from executions.executors.command import CommandExecutor
from executions.executors.database import DatabaseExecutor
from executions.executors.http import HTTPExecutor
from executions.executors.mcp import MCPExecutor
from executions.executors.python import PythonExecutor
from executions.python_tools.registry import ToolRegistry
from executions.redaction import REDACTED, trim_partial_secrets, with_encoded_forms
from executions.services.runner.redacting import CallSecrets
from tests.executions.test_command_sandbox import PYTHON, require_sandbox
from tests.executions.test_mcp import SERVER_SCRIPT

SECRET = f"Raw-Secret-{uuid.uuid4().hex[:16]}-XyZ"


def call(kind: str, configs: dict, inputs: dict | None = None) -> ToolCall:
    return ToolCall(
        tool_name=f"{kind}_tool",
        tool_type=kind,
        configs=configs,
        inputs=inputs or {},
        timeout_seconds=20,
        secret_values=(SECRET,),
    )


def http_results(request) -> tuple[ExecutorResult, ExecutorResult]:
    upstream = request.getfixturevalue("upstream")
    request.getfixturevalue("allow_loopback")

    def configs(status: int) -> dict:
        return {
            "base_url": upstream.url,
            "endpoint": f"/echo-header/X-API-Key?status={status}",
            "auth_type": "api_key",
            "api_key": SECRET,
        }

    return (
        HTTPExecutor().execute(call("http", configs(200))),
        HTTPExecutor().execute(call("http", configs(500))),
    )


def database_results(request) -> tuple[ExecutorResult, ExecutorResult]:
    folder = request.getfixturevalue("tmp_path")
    request.getfixturevalue("settings").TOOLHUB_SQLITE_DIRS = [str(folder)]
    sqlite3.connect(folder / "raw.db").close()

    def run(query: str, inputs: dict | None = None) -> ExecutorResult:
        configs = {"connection_string": f"sqlite:///{folder}/raw.db", "query_template": query}
        return DatabaseExecutor().execute(call("database", configs, inputs))

    # SQLite's exception names the table it could not find.
    missing = 'SELECT * FROM "' + SECRET + '"'  # noqa: S608 - a fixed test value
    return run("SELECT :v AS v", {"v": SECRET}), run(missing)


def mcp_results(request) -> tuple[ExecutorResult, ExecutorResult]:
    request.getfixturevalue("settings").TOOLHUB_MCP_STDIO_COMMANDS = [sys.executable]
    server = {
        "name": "raw",
        "transport": "stdio",
        "command": sys.executable,
        "args": [str(SERVER_SCRIPT), "--transport", "stdio"],
        "env": {"VENDOR_TOKEN": SECRET},
        "timeout_seconds": 20,
    }
    executor = MCPExecutor(egress_check=lambda url: None)

    def run(tool: str, inputs: dict) -> ExecutorResult:
        return executor.execute(call("mcp", {"server": server, "remote_tool_name": tool}, inputs))

    return run("whoami", {"env": "VENDOR_TOKEN"}), run("fail", {"message": f"refused {SECRET}"})


def python_results(request) -> tuple[ExecutorResult, ExecutorResult]:
    tools = ToolRegistry()

    @tools.tool
    def answers() -> dict:
        return {"key": SECRET}

    @tools.tool
    def raises() -> None:
        raise PermissionError(f"refused {SECRET}")

    executor = PythonExecutor(tools)
    return (
        executor.execute(call("python", {"function": "answers"})),
        executor.execute(call("python", {"function": "raises"})),
    )


def command_results(request) -> tuple[ExecutorResult, ExecutorResult]:
    require_sandbox()
    request.getfixturevalue("settings").TOOLHUB_COMMAND_ALLOWLIST = [PYTHON]

    def run(code: str) -> ExecutorResult:
        configs = {"argv": [PYTHON, "-c", code], "env": {"API_TOKEN": SECRET}}
        return CommandExecutor().execute(call("command", configs))

    read = "import os, sys; t = os.environ['API_TOKEN']"
    return run(f"{read}; print(t)"), run(f"{read}; sys.stderr.write(t); sys.exit(3)")


KINDS = {
    "command": command_results,
    "database": database_results,
    "http": http_results,
    "mcp": mcp_results,
    "python": python_results,
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_an_executor_answers_raw_and_the_runner_redacts(kind, request):
    answered, failed = KINDS[kind](request)
    assert answered.ok, answered.error_message
    assert not failed.ok
    # The executor's own answer: the secret as the tool gave it, nothing redacted.
    assert SECRET in json.dumps(answered.output) and REDACTED not in json.dumps(answered.output)
    assert SECRET in failed.error_message and REDACTED not in failed.error_message
    # The runner's: none of it, in any form.
    for result in (answered, failed):
        redacted = CallSecrets((SECRET,)).result(result)
        shown = json.dumps(
            [redacted.output, redacted.error_message, redacted.metadata], default=str
        )
        assert REDACTED in shown
        for form in (SECRET, SECRET.upper(), base64.b64encode(SECRET.encode()).decode()):
            assert form not in shown
        assert redacted.secrets_used == () and redacted.hidden_in_errors == ()


def test_the_runner_redacts_what_the_executor_resolved_and_keeps_a_login_out_of_messages_only():
    resolved = f"Resolved-{uuid.uuid4().hex}"
    result = ExecutorResult(
        ok=False,
        output={"rows": [["svc_reader", resolved]]},
        error_type="tool_error",
        error_message=f"role svc_reader refused {resolved.upper()}",
        metadata={"url": f"https://{resolved}@example.org/"},
        secrets_used=(resolved,),
        hidden_in_errors=("svc_reader",),
    )
    redacted = CallSecrets(()).result(result)
    assert redacted.output == {"rows": [["svc_reader", REDACTED]]}  # the user may be an answer
    assert redacted.error_message == f"role {REDACTED} refused {REDACTED}"
    assert redacted.metadata == {"url": f"https://{REDACTED}@example.org/"}
    assert redacted.secrets_used == () and redacted.hidden_in_errors == ()


@pytest.mark.parametrize(
    ("text", "at_start", "kept"),
    [
        (f"abc {SECRET[:7]}", False, "abc "),
        (f"{SECRET[-7:]} abc", True, " abc"),
        (f"abc {base64.b64encode(SECRET.encode()).decode()[:9]}", False, "abc "),
        ("abc plain", False, "abc plain"),
    ],
    ids=["its start at the end", "its end at the start", "its base64 cut", "none"],
)
def test_a_cut_text_loses_the_piece_of_a_secret_the_cut_left(text, at_start, kept):
    assert trim_partial_secrets(text, with_encoded_forms([SECRET]), at_start=at_start) == kept


def test_a_commands_cut_streams_lose_the_piece_of_a_secret_and_keep_the_whole_ones(
    monkeypatch, settings
):
    """The sandbox caps each stream, and the message quotes stderr's end: whole secrets
    stay for the runner to redact, a piece left by either cut is dropped."""
    from executions.executors.command import executor as command_executor
    from executions.executors.command.sandbox import Outcome

    stderr = f"{SECRET} " + "e" * command_executor.STDERR_EXCERPT_CHARS + f" {SECRET}"
    outcome = Outcome(
        stdout=f"{SECRET} out {SECRET[:9]}".encode(),
        stderr=stderr.encode(),
        exit_code=3,
        duration_ms=1.0,
        truncated=True,
        timed_out=False,
    )
    monkeypatch.setattr(command_executor.sandbox, "run", lambda *a, **kw: outcome)
    settings.TOOLHUB_COMMAND_ALLOWLIST = [PYTHON]
    result = CommandExecutor().execute(call("command", {"argv": [PYTHON, "-c", "pass"]}))
    assert result.error_type == "tool_error", result.error_message
    assert result.output["stdout"] == f"{SECRET} out "
    # The excerpt starts inside the first secret: its tail is dropped, the last kept whole.
    excerpt = result.error_message.split(": ", 1)[1]
    assert excerpt.startswith("e") and excerpt.endswith(SECRET)
    assert SECRET[-5:] not in excerpt.removesuffix(SECRET)
