"""The command executor: a tool's configs and a call's inputs into one sandboxed run."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Mapping
from typing import Any

from django.conf import settings

from executions.executors.base import ErrorType, ExecutorResult, ToolCall, failure_since
from executions.executors.command import sandbox
from executions.executors.command.configs import (
    CONFIGS,
    END_OF_OPTIONS,
    PLACEHOLDER,
    allowlist_problem,
    placeholders,
)
from executions.executors.configs import ConfigError
from executions.redaction import trim_partial_secrets, with_encoded_forms

SANDBOX_UNAVAILABLE = "sandbox_unavailable"
STDERR_EXCERPT_CHARS = 2000


class _Refused(Exception):
    def __init__(self, error_type: str, message: str):
        super().__init__(message)
        self.error_type = error_type


def _as_text(value: Any) -> str:
    """An input as one argument: a string as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def render(template: str, inputs: Mapping[str, Any], *, where: str) -> str | None:
    """``template`` with each ``{name}`` replaced by that input; None when the template is
    exactly one placeholder whose input was not given (the argument is left out)."""
    whole = PLACEHOLDER.fullmatch(template)
    if whole and whole.group(1) and inputs.get(whole.group(1)) is None:
        return None

    def substitute(match) -> str:
        name = match.group(1)
        if name is None:
            return match.group(0)[0]  # "{{" -> "{", "}}" -> "}"
        if inputs.get(name) is None:
            raise _Refused(ErrorType.INPUT, f"{where} needs the input {name!r}, which is not given")
        return _as_text(inputs[name])

    rendered = PLACEHOLDER.sub(substitute, template)
    if "\x00" in rendered:
        raise _Refused(ErrorType.INPUT, f"{where} would contain a NUL character")
    return rendered


def _argv(configs, inputs) -> list[str]:
    argv = CONFIGS.read(configs, "argv")
    if argv is None:
        raise _Refused(ErrorType.CONFIG, "config 'argv' is required: the program and its arguments")
    problem = allowlist_problem(argv[0])  # read() checked it too; the list may change
    if problem:
        raise _Refused(ErrorType.CONFIG, problem)
    boundary = _options_end(argv) if CONFIGS.read(configs, "end_of_options") else None
    dash_allowed = CONFIGS.read(configs, "dash_values_at")
    rendered = [argv[0]]
    for index, item in enumerate(argv[1:], start=1):
        if index == boundary and item != END_OF_OPTIONS:
            rendered.append(END_OF_OPTIONS)
        value = render(item, inputs, where=f"argument {index}")
        if value is None:
            continue
        # A dash the template did not write came from an input: the program would read
        # it as an option (tar's --checkpoint-action=exec=… runs a program).
        after_boundary = boundary is not None and index >= boundary
        if value.startswith("-") and not item.startswith("-") and not after_boundary:
            if index not in dash_allowed:
                raise _Refused(ErrorType.INPUT, _dash_refusal(index, item))
        rendered.append(value)
    return rendered


def _options_end(argv: list[str]) -> int | None:
    """Where ``--`` goes: before the first argument built from an input (None when no
    argument is). An option the template writes after it would be read as data."""
    first = next((i for i, item in enumerate(argv[1:], start=1) if placeholders(item)), None)
    if first is None:
        return None
    if END_OF_OPTIONS in argv[1:first]:
        first = argv.index(END_OF_OPTIONS, 1)
    late = [i for i, item in enumerate(argv[first:], start=first) if item.startswith("-")]
    late = [i for i in late if not (i == first and argv[i] == END_OF_OPTIONS)]
    if late:
        raise _Refused(
            ErrorType.CONFIG,
            f"with end_of_options, '--' goes before argument {first} (the first built from an "
            f"input), so argument {late[0]} would not be read as an option: put the options "
            "first, or use dash_values_at instead",
        )
    return first


def _dash_refusal(index: int, item: str) -> str:
    names = ", ".join(repr(n) for n in placeholders(item))
    return (
        f"argument {index} (input {names}) starts with '-', which the program could read as "
        "an option; give a value that does not start with '-' (the tool allows it only "
        "where its config 'dash_values_at' lists the position, or after '--' with "
        "'end_of_options')"
    )


def _stdin(configs, inputs) -> bytes | None:
    name = CONFIGS.read(configs, "stdin")
    if name is None or inputs.get(name) is None:
        return None
    return _as_text(inputs[name]).encode("utf-8", "surrogatepass")


def _files(configs, inputs) -> dict[str, bytes]:
    files = {}
    for path, content in CONFIGS.read(configs, "workspace_files").items():
        whole = PLACEHOLDER.fullmatch(content)
        if whole and whole.group(1):
            value = inputs.get(whole.group(1))
            text = "" if value is None else _as_text(value)
        else:
            text = content
        files[path] = text.encode("utf-8", "surrogatepass")
    return files


def _limits(configs, call: ToolCall) -> sandbox.Limits:
    timeout = CONFIGS.read(configs, "timeout_seconds") or call.timeout_seconds
    return sandbox.Limits(
        timeout_seconds=min(float(timeout), float(call.timeout_seconds)),
        memory_mb=CONFIGS.read(configs, "memory_mb"),
        cpu_seconds=CONFIGS.read(configs, "cpu_seconds"),
        max_processes=CONFIGS.read(configs, "max_processes"),
        max_output_bytes=min(CONFIGS.read(configs, "max_output_bytes"), call.max_response_bytes),
        workspace_mb=int(getattr(settings, "TOOLHUB_COMMAND_WORKSPACE_MB", 64)),
    )


def _decoded(data: bytes) -> str:
    return data.decode("utf-8", "replace")


class CommandExecutor:
    kind = "command"

    def execute(self, call: ToolCall) -> ExecutorResult:
        started = time.perf_counter()
        failure = failure_since(started)

        try:
            argv = _argv(call.configs, call.inputs)
            stdin = _stdin(call.configs, call.inputs)
            files = _files(call.configs, call.inputs)
            env = CONFIGS.read(call.configs, "env")
            limits = _limits(call.configs, call)
        except ConfigError as exc:
            return failure(ErrorType.CONFIG, str(exc))
        except _Refused as exc:
            return failure(exc.error_type, str(exc))
        try:
            outcome = sandbox.run(
                argv,
                stdin=stdin,
                env=env,
                files=files,
                limits=limits,
                cancellation=call.cancellation,
            )
        except sandbox.SandboxUnavailable as exc:
            return failure(SANDBOX_UNAVAILABLE, f"command tools cannot run on this host: {exc}")
        return self._result(outcome, limits, failure, started, call.secret_values)

    @staticmethod
    def _result(outcome: sandbox.Outcome, limits: sandbox.Limits, failure, started, secrets):
        # Returned raw (the runner redacts), but a stream cut at the output cap or by the
        # kill at the deadline may end with the start of a secret: that piece is dropped.
        cut = outcome.truncated or outcome.timed_out
        forms = with_encoded_forms(secrets) if cut or outcome.exit_code != 0 else []
        stdout, stderr = _decoded(outcome.stdout), _decoded(outcome.stderr)
        if cut:
            stdout, stderr = (
                trim_partial_secrets(stdout, forms),
                trim_partial_secrets(stderr, forms),
            )
        output = {
            "stdout": stdout,
            "stderr": stderr,
            "exit_code": outcome.exit_code,
            "duration_ms": round(outcome.duration_ms, 1),
            "truncated": outcome.truncated,
        }
        metadata = {"exit_code": outcome.exit_code, "truncated": outcome.truncated}
        if outcome.timed_out:
            return failure(
                ErrorType.TIMEOUT,
                f"the command did not finish within {limits.timeout_seconds:g}s; it was killed "
                "with every process it started",
                output=output,
                metadata=metadata,
            )
        if outcome.exit_code != 0:
            return failure(
                ErrorType.TOOL,
                f"the command {_exit_words(outcome.exit_code)}: "
                f"{_stderr_excerpt(stderr, forms) or '(no stderr)'}",
                output=output,
                metadata=metadata,
            )
        return ExecutorResult(
            ok=True,
            output=output,
            metadata=metadata,
            latency_ms=(time.perf_counter() - started) * 1000,
        )


def _stderr_excerpt(stderr: str, forms: list[str]) -> str:
    """The end of stderr for the error message, without the end of a secret the cut
    may leave at its start."""
    if len(stderr) <= STDERR_EXCERPT_CHARS:
        return stderr.strip()
    return trim_partial_secrets(stderr[-STDERR_EXCERPT_CHARS:], forms, at_start=True).strip()


# Signals this sandbox's own limits send, and what they most likely mean here.
_SIGNAL_HINTS = {
    signal.SIGKILL: "cpu_seconds used up, or killed",
    signal.SIGXCPU: "cpu_seconds used up",
    signal.SIGXFSZ: "a file reached the size limit",
    signal.SIGSEGV: "a crash, or memory_mb reached",
}


def _exit_words(code: int) -> str:
    """``exited with code 3``; ``was killed by SIGKILL`` only when the run was killed by a
    signal (a negative code). bubblewrap ends with 128 + N both when the program exited
    with that code and when signal N killed it: a code above 128 is a code, with a hint
    only where one of the sandbox's limits sends that signal."""
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    words = f"exited with code {code}"
    try:
        killed = signal.Signals(code - 128) if code > 128 else None
    except ValueError:
        killed = None
    if killed in _SIGNAL_HINTS:
        words += f" (as a program killed by {killed.name} does: {_SIGNAL_HINTS[killed]})"
    return words
