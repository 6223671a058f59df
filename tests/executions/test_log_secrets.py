"""What is logged while a call runs loses the call's secrets, whoever logs it.

The runner redacts what a call returns; a log line is another way out: a bug of
ours after the tool answered (``run_claimed`` logs it with its traceback), a
library's warning quoting a request. While a call is claimed, every record that
reaches ToolHub's handlers (the console's, Celery's in a worker) has the call's
secrets removed from its message, its arguments and its traceback
(``toolhub.log_secrets``).
"""

from __future__ import annotations

import io
import logging

import pytest

from executions.services import guarding
from tests.executions.test_redaction_once import caller, forms, http_tools, run  # noqa: F401
from toolhub import log_secrets
from toolhub.log_secrets import SecretsLogFilter

pytestmark = [pytest.mark.django_db(transaction=True)]


def configured_handler() -> logging.Handler:
    """The console handler the logging settings give the root logger."""
    handlers = [
        handler
        for handler in logging.getLogger().handlers
        if any(isinstance(f, SecretsLogFilter) for f in handler.filters)
    ]
    assert handlers, "no handler of the root logger filters secrets"
    return handlers[0]


@pytest.fixture
def console():
    handler = configured_handler()
    stream = io.StringIO()
    previous = handler.setStream(stream)
    try:
        yield stream
    finally:
        handler.setStream(previous)


def test_a_crash_after_the_tool_answered_is_logged_without_the_calls_secret(
    caller,  # noqa: F811
    request,
    console,
    monkeypatch,
    eager_tasks,
):
    echoes, _ = http_tools(request)

    def crash(execution, spec, result):
        # A bug of ours quoting what the tool answered before redaction reached it.
        raise RuntimeError(f"guarding failed on {result.output} with {forms()[0]}")

    monkeypatch.setattr(guarding, "guarded_result", crash)
    logging.getLogger("executions").setLevel(logging.INFO)
    body = run(caller, echoes, {}).json()
    assert body["status"] == "failed", body
    logged = console.getvalue()
    assert "failed while running" in logged and "RuntimeError" in logged  # it was logged
    for leak in forms():
        assert leak not in logged
    assert "[REDACTED]" in logged


def test_outside_a_call_a_record_is_left_as_it_is():
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "token %s", ("abc",), None)
    assert SecretsLogFilter().filter(record)
    assert record.getMessage() == "token abc"


def test_in_a_call_the_message_its_arguments_and_its_traceback_lose_the_secret():
    secret = "Log-Secret-0123456789"
    try:
        raise ValueError(f"upstream said {secret}")
    except ValueError as exc:
        exc_info = (type(exc), exc, exc.__traceback__)
    with log_secrets.scope():
        log_secrets.add(lambda text: text.replace(secret, "[REDACTED]"))
        record = logging.LogRecord(
            "x", logging.ERROR, __file__, 1, "sent %s", (secret,), exc_info, sinfo=secret
        )
        assert SecretsLogFilter().filter(record)
    text = logging.Formatter("%(message)s").format(record)
    assert secret not in text and secret not in (record.stack_info or "")
    assert "sent [REDACTED]" in text and "upstream said [REDACTED]" in text
    # The scope is closed: the next record is not touched.
    later = logging.LogRecord("x", logging.ERROR, __file__, 1, "sent %s", (secret,), None)
    SecretsLogFilter().filter(later)
    assert later.getMessage() == f"sent {secret}"
