"""The command sandbox, with real bubblewrap: what a program can do, and what it cannot.

Each containment case runs a program that tries to get out and is checked from
outside: the service it tried to reach saw nothing, the file it tried to write
is not there, no process of it is left.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from executions.executors.base import ErrorType, ToolCall
from executions.executors.command import CommandExecutor, sandbox_problem
from tests.conftest import EXPECT_SERVICES

PYTHON = "/usr/bin/python3"
SH = "/bin/sh"


def require_sandbox() -> None:
    problem = sandbox_problem() if os.path.exists(PYTHON) else f"{PYTHON} is missing"
    if problem:
        if EXPECT_SERVICES:
            pytest.fail(f"The command sandbox was expected (CI) but {problem}.")
        pytest.skip(problem)


@pytest.fixture
def commands(settings):
    settings.TOOLHUB_COMMAND_ALLOWLIST = [PYTHON, SH]
    require_sandbox()
    return settings


def run(code: str, *args: str, inputs=None, timeout: float = 10, **configs):
    """Run ``python3 -c code args…`` as a command tool would."""
    call = ToolCall(
        tool_name="sandboxed",
        tool_type="command",
        configs={"argv": [PYTHON, "-c", code, *args], **configs},
        inputs=inputs or {},
        timeout_seconds=timeout,
    )
    return CommandExecutor().execute(call)


def shell(script: str, timeout: float = 10, **configs):
    call = ToolCall(
        tool_name="sandboxed",
        tool_type="command",
        configs={"argv": [SH, "-c", script], **configs},
        inputs={},
        timeout_seconds=timeout,
    )
    return CommandExecutor().execute(call)


def processes_with(marker: str) -> list[int]:
    """Host processes whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


# A computation


def test_arguments_stdin_and_exit_code_come_back(commands):
    code = "import sys; print(sys.argv[1:]); print(sys.stdin.read().upper()); sys.exit(0)"
    result = run(
        code,
        "{column}",
        "--n={n}",
        "{absent}",
        inputs={"column": "price", "n": 3, "csv": "a,b"},
        stdin="csv",
    )
    assert result.ok, result.error_message
    assert result.output["stdout"] == "['price', '--n=3']\nA,B\n"
    assert result.output["exit_code"] == 0 and result.output["truncated"] is False
    assert result.output["duration_ms"] > 0


def test_a_non_zero_exit_is_a_failure_with_the_code_and_stderr(commands):
    result = run("import sys; sys.stderr.write('no such column'); sys.exit(3)")
    assert not result.ok and result.error_type == ErrorType.TOOL
    assert result.output["exit_code"] == 3
    assert "code 3" in result.error_message and "no such column" in result.error_message


def test_workspace_files_are_readable_and_read_only(commands):
    code = (
        "import os\n"
        "print(open('data/in.csv').read(), open('note.txt').read())\n"
        "try:\n    open('data/in.csv', 'w')\nexcept OSError as e:\n    print('refused', e.errno)\n"
        "open('out.txt', 'w').write('ok'); print(open('out.txt').read())\n"
    )
    result = run(
        code,
        inputs={"csv": "x,y\n1,2"},
        workspace_files={"data/in.csv": "{csv}", "note.txt": "literal {{braces}}"},
    )
    assert result.ok, result.error_message
    assert result.output["stdout"].splitlines() == [
        "x,y",
        "1,2 literal {{braces}}",
        "refused 30",  # EROFS
        "ok",
    ]


@pytest.mark.parametrize(
    "argument",
    ["; rm -rf /", "$(id)", "`id`", "a b\tc", "{other}", "'\"", "*", "a-b", "x --output=/etc/x"],
)
def test_arguments_reach_the_program_as_data(commands, argument):
    result = run(
        "import sys, json; print(json.dumps(sys.argv[1:]))",
        "{value}",
        "--flag={value}",
        inputs={"value": argument, "other": "SHOULD-NOT-APPEAR"},
    )
    assert result.ok, result.error_message
    assert json.loads(result.output["stdout"]) == [argument, f"--flag={argument}"]


# An input starting with '-': tar's --checkpoint-action=exec=… runs a program the
# allow-list does not name, from inside the allowed one.

TAR = "/usr/bin/tar"
CHECKPOINT = {"first": "--checkpoint=1", "second": "--checkpoint-action=exec=echo RAN-ELSEWHERE"}


def tar(inputs, **configs):
    call = ToolCall(
        tool_name="archiver",
        tool_type="command",
        configs={
            "argv": [TAR, "-cf", "/dev/null", "{first}", "{second}", "note.txt"],
            "workspace_files": {"note.txt": "hello"},
            **configs,
        },
        inputs=inputs,
        timeout_seconds=10,
    )
    return CommandExecutor().execute(call)


@pytest.fixture
def with_tar(commands):
    if not os.path.exists(TAR):
        pytest.skip(f"{TAR} is missing")
    commands.TOOLHUB_COMMAND_ALLOWLIST = [PYTHON, SH, TAR]
    return commands


@pytest.mark.parametrize("value", ["--checkpoint=1", "-c", "-5"])
def test_an_input_starting_with_a_dash_is_refused_before_the_program_runs(with_tar, value):
    result = tar({**CHECKPOINT, "first": value})
    assert not result.ok and result.error_type == ErrorType.INPUT
    assert result.output is None  # nothing ran
    assert "argument 3 (input 'first') starts with '-'" in result.error_message
    assert "dash_values_at" in result.error_message and value not in result.error_message


def test_an_input_starting_with_a_dash_reaches_the_program_where_the_config_allows_it(commands):
    code = "import sys, json; print(json.dumps(sys.argv[1:]))"
    for argument in ("--output=/etc/x", "-c", "-5"):
        result = run(code, "{value}", inputs={"value": argument}, dash_values_at=[3])
        assert result.ok, result.error_message
        assert json.loads(result.output["stdout"]) == [argument]
    refused = run(code, "{value}", "{value}", inputs={"value": "-c"}, dash_values_at=[3])
    assert refused.error_type == ErrorType.INPUT and "argument 4" in refused.error_message


def test_with_end_of_options_tar_reads_inputs_after_a_double_dash_as_file_names(with_tar):
    result = tar(CHECKPOINT, end_of_options=True)
    assert result.error_type == ErrorType.TOOL and result.output["exit_code"] == 2
    assert "RAN-ELSEWHERE" not in result.output["stdout"]
    assert "--checkpoint=1: Cannot stat" in result.output["stderr"]
    archived = tar({"first": "note.txt", "second": "note.txt"}, end_of_options=True)
    assert archived.ok, archived.error_message  # the options before '--' still apply


def test_end_of_options_refuses_a_template_option_that_would_follow_the_double_dash(with_tar):
    call = ToolCall(
        tool_name="archiver",
        tool_type="command",
        configs={"argv": [TAR, "-cf", "{archive}", "-v", "note.txt"], "end_of_options": "true"},
        inputs={"archive": "out.tar"},
        timeout_seconds=10,
    )
    result = CommandExecutor().execute(call)
    assert result.error_type == ErrorType.CONFIG and result.output is None
    assert "argument 3 would not be read as an option" in result.error_message


@pytest.mark.parametrize("code", [129, 130, 137])
def test_an_exit_code_above_128_is_reported_as_the_programs_exit_code(commands, code):
    result = run(f"import sys; sys.exit({code})")
    assert result.error_type == ErrorType.TOOL and result.output["exit_code"] == code
    assert f"the command exited with code {code}" in result.error_message
    assert "SIGHUP" not in result.error_message and "SIGINT" not in result.error_message
    assert "was killed" not in result.error_message


def test_a_program_outside_the_allow_list_is_refused_at_run_time(commands):
    commands.TOOLHUB_COMMAND_ALLOWLIST = [SH]
    result = run("print('ran')")
    assert not result.ok and result.error_type == ErrorType.CONFIG
    assert "TOOLHUB_COMMAND_ALLOWLIST" in result.error_message and result.output is None


# Containment


def test_no_connection_reaches_the_database_redis_or_a_web_server(commands, upstream):
    targets = [("127.0.0.1", 5432), ("127.0.0.1", 6379), ("127.0.0.1", upstream.port)]
    for host, port in targets:  # from outside, each answers
        socket.create_connection((host, port), timeout=2).close()
    code = (
        "import socket, sys, json\n"
        "out = {}\n"
        "for port in sys.argv[1:]:\n"
        "    try:\n"
        "        socket.create_connection(('127.0.0.1', int(port)), timeout=2).close()\n"
        "        out[port] = 'connected'\n"
        "    except OSError as e:\n"
        "        out[port] = type(e).__name__\n"
        "try:\n"
        "    socket.getaddrinfo('example.com', 80); out['dns'] = 'resolved'\n"
        "except OSError as e:\n"
        "    out['dns'] = type(e).__name__\n"
        "print(json.dumps(out))\n"
    )
    upstream.reset()
    result = run(code, *(str(port) for _, port in targets))
    assert result.ok, result.error_message
    seen = json.loads(result.output["stdout"])
    assert "connected" not in seen.values() and seen["dns"] != "resolved", seen
    assert upstream.requests == []


def test_toolhub_code_var_and_the_worker_environment_are_not_readable(commands, monkeypatch):
    canary = f"canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("TOOLHUB_TEST_CANARY", canary)
    paths = [
        str(Path(settings.BASE_DIR) / "manage.py"),
        str(settings.VAR_DIR),
        str(Path(settings.BASE_DIR) / "toolhub" / "settings" / "__init__.py"),
        f"/proc/{os.getpid()}/environ",
        "/proc/1/environ",
        sys.prefix,
    ]
    code = (
        "import os, sys, json\n"
        "out = {'env': dict(os.environ)}\n"
        "for p in sys.argv[1:]:\n"
        "    try:\n"
        "        out[p] = os.listdir(p) if os.path.isdir(p) else open(p, 'rb').read().decode('latin-1')\n"
        "    except OSError as e:\n"
        "        out[p] = type(e).__name__\n"
        "print(json.dumps(out))\n"
    )
    result = run(code, *paths)
    assert result.ok, result.error_message
    seen = json.loads(result.output["stdout"])
    assert canary not in result.output["stdout"]
    assert set(seen["env"]) <= {"PATH", "HOME", "TMPDIR", "LANG", "PWD", "LC_CTYPE"}
    for path in [*paths[:3], sys.prefix]:
        assert seen[path] == "FileNotFoundError", (path, seen[path])
    assert "DATABASE_URL" not in result.output["stdout"]


def test_root_and_other_calls_workspaces_are_not_visible(commands):
    marker = f"marker-{uuid.uuid4().hex}"
    holder = threading.Thread(
        target=shell,
        args=(f"echo secret > /workspace/{marker}; cp /workspace/{marker} /tmp/; sleep 3",),
    )
    holder.start()
    try:
        time.sleep(0.5)
        result = shell(
            "ls -a /root /home /workspace /tmp 2>&1; "
            f"find / -xdev -name '{marker}*' 2>/dev/null; ls /proc | grep -c '^[0-9]'"
        )
    finally:
        holder.join()
    assert result.ok, result.error_message
    out = result.output["stdout"]
    assert marker not in out
    assert "'/root': No such file" in out and "'/home': No such file" in out
    # Its own processes only: its shell, ls/grep and bubblewrap's init.
    assert int(out.strip().splitlines()[-1]) <= 4
    # Nothing of either call is on the host's disk.
    assert not list(Path("/tmp").glob(f"{marker}*"))  # noqa: S108 - the host's /tmp


def test_writing_outside_the_workspace_fails(commands):
    name = f"toolhub-escape-{uuid.uuid4().hex}"
    targets = [f"/usr/{name}", f"/etc/{name}", f"/{name}", f"/usr/local/{name}", f"/dev/{name}"]
    code = (
        "import sys\n"
        "for p in sys.argv[1:]:\n"
        "    try:\n"
        "        open(p, 'w').write('x'); print(p, 'written')\n"
        "    except OSError as e:\n"
        "        print(p, type(e).__name__)\n"
    )
    result = run(code, *targets)
    assert result.ok, result.error_message
    assert "written" not in result.output["stdout"], result.output["stdout"]
    for target in targets:
        assert not os.path.exists(target)


def test_a_fork_bomb_stops_at_the_process_limit(commands):
    marker = f"forkbomb-{uuid.uuid4().hex}"
    code = (
        "import os, time, sys\n"
        "n = 0\n"
        "try:\n"
        "    while True:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(30); os._exit(0)\n"
        "        n += 1\n"
        "except OSError as e:\n"
        "    print(n, e.errno)\n"
    )
    started = time.monotonic()
    result = run(code, marker, max_processes=8, timeout=15)
    assert result.ok, result.error_message
    forked, errno = result.output["stdout"].split()
    assert int(forked) == 7 and errno == "11"  # EAGAIN: itself and 7 children
    # The program ended, and its children went with the sandbox.
    assert time.monotonic() - started < 10
    assert processes_with(marker) == []


def test_a_memory_hog_is_stopped_at_its_limit(commands):
    result = run("x = bytearray(512 * 1024 * 1024); print('allocated')", memory_mb=128)
    assert not result.ok and result.error_type == ErrorType.TOOL
    assert "allocated" not in result.output["stdout"]
    assert "MemoryError" in result.output["stderr"]


def test_cpu_time_is_limited(commands):
    result = run("while True: pass", cpu_seconds=1, timeout=10)
    assert not result.ok and result.output["exit_code"] == 128 + 9
    assert "code 137 (as a program killed by SIGKILL does: cpu_seconds used up" in (
        result.error_message
    )
    assert result.output["duration_ms"] < 5000


def test_a_file_larger_than_the_workspace_limit_cannot_be_written(commands):
    commands.TOOLHUB_COMMAND_WORKSPACE_MB = 1
    result = shell("head -c 5000000 /dev/zero > big")
    assert not result.ok and result.output["exit_code"] == 128 + 25
    assert (
        "code 153 (as a program killed by SIGXFSZ does: a file reached the size limit)"
        in result.error_message
    )


def test_an_endless_loop_is_killed_at_the_timeout_with_no_process_left(commands):
    marker = f"endless-{uuid.uuid4().hex}"
    started = time.monotonic()
    result = shell(
        f"sleep 1000 {marker} & sleep 1000 {marker} & exec {PYTHON} -c 'while True: pass' {marker}",
        timeout=1.5,
    )
    elapsed = time.monotonic() - started
    assert not result.ok and result.error_type == ErrorType.TIMEOUT
    assert 1.4 < elapsed < 5
    assert processes_with(marker) == []


def test_100_mb_of_output_is_capped(commands):
    code = (
        "import sys\nchunk = b'x' * (1 << 20)\nfor _ in range(100): sys.stdout.buffer.write(chunk)"
    )
    started = time.monotonic()
    result = run(code, max_output_bytes=65536, timeout=30)
    assert result.ok, result.error_message
    assert len(result.output["stdout"]) == 65536 and result.output["truncated"] is True
    assert result.metadata["truncated"] is True
    assert time.monotonic() - started < 20


def test_a_missing_bubblewrap_refuses_every_call_naming_it(commands):
    commands.TOOLHUB_BWRAP = "/nonexistent/bwrap"
    result = run("print('ran')")
    assert not result.ok and result.error_type == "sandbox_unavailable"
    assert "bubblewrap is not installed at /nonexistent/bwrap" in result.error_message
    assert result.output is None


def test_a_host_without_user_namespaces_refuses_every_call_naming_them(commands):
    import tempfile

    # The real bubblewrap, started where creating a user namespace is refused (inside
    # a namespace made with --disable-userns), as on a host that does not allow them.
    # In a directory uid 65534 may read: a root worker starts bubblewrap as that user.
    where = Path(tempfile.mkdtemp())
    where.chmod(0o755)
    wrapper = where / "bwrap-without-userns"
    wrapper.write_text(
        "#!/bin/sh\n"
        "exec /usr/bin/bwrap --unshare-user --disable-userns --ro-bind / / --proc /proc "
        '--dev /dev -- /usr/bin/bwrap "$@"\n'
    )
    wrapper.chmod(0o755)
    commands.TOOLHUB_BWRAP = str(wrapper)
    result = run("print('ran')")
    assert not result.ok and result.error_type == "sandbox_unavailable"
    assert "user namespaces are not available" in result.error_message
    assert result.output is None
    wrapper.unlink()
    where.rmdir()


def test_toolhub_installed_under_a_system_directory_is_still_hidden(commands):
    # As in an image that installs ToolHub under /usr (site-packages): its directory
    # is covered by an empty read-only tmpfs inside the sandbox.
    installed = Path("/usr/share")
    assert any(installed.iterdir())
    commands.BASE_DIR = installed
    result = run("import os, sys; print(os.listdir(sys.argv[1]))", str(installed))
    assert result.ok, result.error_message
    assert result.output["stdout"] == "[]\n"
