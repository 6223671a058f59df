"""The runner's one redaction: every secret a call used, removed once, in every form.

Executors return what the tool gave them. The runner gathers the secrets of the
call before it runs (the tool's secret configs as saved and as the executor
reads them, the caller's sealed secrets, what the configs resolve to: an MCP
server's token and environment, a database alias's password, an HTTP tool's
authentication) and adds those the executor reports it resolved
(``ExecutorResult.secrets_used``). ``CallSecrets`` then removes all of them,
with the forms an upstream may echo them in (``with_encoded_forms``), from the
output, the error message and the metadata, and from the runner's own log lines
about the call, before anything is guarded, stored, cached, audited or answered.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterable
from functools import cached_property
from typing import Any

from executions.executors.base import ExecutorResult
from executions.jsonsafe import json_safe
from executions.redaction import redact, redact_text, with_encoded_forms
from toolhub import log_secrets


class CallSecrets:
    """The secret values of one call, and their removal from what it returns and logs."""

    def __init__(self, values: Iterable[str] = ()):
        self.values: tuple[str, ...] = tuple(dict.fromkeys(str(v) for v in values if v))

    @cached_property
    def forms(self) -> list[str]:
        return with_encoded_forms(self.values)

    def text(self, text: str) -> str:
        return redact_text(text, self.forms)

    def value(self, value: Any) -> Any:
        """``value`` (any JSON), with every secret taken out of its texts."""
        return redact(json_safe(value), self.forms)

    def result(self, result: ExecutorResult) -> ExecutorResult:
        """``result`` with every secret removed from its output, error message and
        metadata (the executor's own secrets too, which it no longer carries)."""
        forms = self.forms
        if result.secrets_used:
            forms = with_encoded_forms([*self.values, *result.secrets_used])
            log_secrets.add(lambda text: redact_text(text, forms))
        result.output = redact(json_safe(result.output), forms)
        result.metadata = redact(result.metadata, forms)
        if result.error_message:
            message = redact_text(result.error_message, forms)
            if result.hidden_in_errors:
                message = redact_text(message, with_encoded_forms(result.hidden_in_errors))
            result.error_message = message
        result.secrets_used = result.hidden_in_errors = ()
        return result

    def log_crash(self, logger: logging.Logger, message: str, *args, exc: BaseException) -> None:
        """``logger.exception`` with the traceback's text redacted: an exception's message
        (and those of its causes) may quote what an upstream or a driver was sent."""
        trace = "".join(traceback.format_exception(exc))
        logger.error(f"{message}\n%s", *args, self.text(trace))
