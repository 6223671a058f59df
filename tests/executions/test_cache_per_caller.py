"""A cached answer shaped by an operator's after-guard is served only to the caller it
was guarded for.

An operator's after-guard sees ``context.caller`` and may redact one caller's answer
and not another's (a support agent sees e-mail addresses, a bot does not). The result
cache kept answers per tool, arguments and after-guards only: the next caller with the
same arguments was served the first caller's answer, past the guard.
"""

from __future__ import annotations

import uuid
from types import SimpleNamespace

from django.utils import timezone

from executions.services.governance import cached_result, store_result
from registry.models import Guard, Tool


def _answered(tool, guards, caller: str, digest: str) -> None:
    execution = SimpleNamespace(
        pk=uuid.uuid4(),
        status="succeeded",
        input_hash=digest,
        principal_name=caller,
        output_data={"email": "bob@example.com"},
        output_truncated=False,
        output_artifact=None,
        output_size=30,
        chars_out=30,
        guard_decisions=[],
    )
    store_result(tool, execution, guards)


def test_an_answer_an_operator_after_guard_shaped_is_not_served_to_another_caller():
    tool = Tool(pk=uuid.uuid4(), name="t", type="http", cache_ttl_seconds=60)
    tool.definition_changed_at = timezone.now()
    guard = Guard(
        pk=uuid.uuid4(),
        name="by-caller",
        kind="python",
        stage="after",
        action="redact",
        config={"function": "hide_unless_support"},
        updated_at=timezone.now(),
    )
    digest = uuid.uuid4().hex
    _answered(tool, [guard], "support-agent", digest)
    assert cached_result(tool, digest, [guard], "support-agent") is not None
    assert cached_result(tool, digest, [guard], "public-bot") is None


def test_answers_guarded_by_built_in_guards_only_are_shared_between_callers():
    tool = Tool(pk=uuid.uuid4(), name="t", type="http", cache_ttl_seconds=60)
    tool.definition_changed_at = timezone.now()
    guard = Guard(
        pk=uuid.uuid4(),
        name="pii",
        kind="pii",
        stage="after",
        action="redact",
        config={},
        updated_at=timezone.now(),
    )
    digest = uuid.uuid4().hex
    _answered(tool, [guard], "support-agent", digest)
    assert cached_result(tool, digest, [guard], "public-bot") is not None
