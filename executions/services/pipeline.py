"""The one way a tool runs: ``execution_request``.

The REST API, the admin's test run and (later) the MCP endpoint all call it.
Steps, in order (DESIGN.md): resolve the tool among those the caller may read
(404 otherwise) → active → ``execute`` permission (403) → validate and coerce
the arguments (422) → rate limits (429) → the approval gate (202
``pending_approval``) → the result cache → write the Execution and enqueue it on commit →
return at once, or wait until it is final.

Refused calls are recorded too (status ``denied`` or ``invalid`` with a reason
code) and audited, then raised as domain errors the API maps to HTTP. Neither
the answer nor the record of a refusal holds a value given for a secret
parameter (``problems_without_secrets``), nor that value given again under
another key or inside another argument, in any form ``secret_forms`` knows
(``without_secret_values``); arguments text that does not parse is not kept
for a tool with secret parameters (``RAW_INPUT_NOT_KEPT``).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from executions.jsonsafe import json_safe, storable_text
from executions.models import Approval, Execution, ExecutionStatus
from executions.redaction import REDACTED, with_encoded_forms
from executions.services import governance, notify, runner, transitions
from executions.services.dispatch import (
    QueueUnavailable,
    dispatch_admitted,
    enqueue,
    queue_refusal,
    run_or_wait,
    runs_inline,
)
from executions.services.records import (
    audit_execution,
    canonical_json,
    cost_of,
    execution_audit_event,
    executions_audited,
    input_hash,
)
from executions.validation import validate_arguments
from registry import access, crypto, selectors, snapshot
from registry.models import Action, Tool
from toolhub import context, rows
from toolhub.api.params import parse_id
from toolhub.exceptions import Conflict, NotFound, PermissionDenied, ToolHubError

logger = logging.getLogger(__name__)
# The Execution row is written on every call: one prepared INSERT shape (toolhub/rows.py).
EXECUTION_ROWS = rows.writer_for(Execution)
# What a refused call's row holds instead of arguments text that did not parse
# (or was no object) when the tool has secret parameters: no part of broken text
# can be told to be or not to be a secret, so none of it is kept.
RAW_INPUT_NOT_KEPT = "[not kept: the tool has secret parameters]"
VALUE_NOT_SHOWN = "value not shown: secret parameter"
# How much of a refusal's message and raw text the row keeps.
MESSAGE_LIMIT = 2000
RAW_INPUT_LIMIT = 65536
# Shorter forms of a secret value are not looked for in messages: they would
# hide ordinary words and numbers (as in executions.redaction).
_MIN_FORM_LENGTH = 4
# Strings and numbers inside a secret value whose own forms are looked for,
# besides the whole value's: any real secret has fewer; any call costs little.
_MAX_SECRET_SCALARS = 256
# Marks secret text in place while redacting (NUL never survives storable_text).
_MASK = "\x00"
_MASKED = re.compile("\x00+")


class InvalidArguments(ToolHubError):
    status_code = 422
    code = "invalid_arguments"


@dataclass
class Caller:
    """Who is calling: the authenticated user, the agent behind it, and the roles it acts with."""

    user: Any
    agent: Any
    role: Group | None
    role_ids: list[int] | None

    @property
    def name(self) -> str:
        return self.agent.name if self.agent is not None else self.user.get_username()

    def all_role_ids(self) -> list[int]:
        return access.role_ids_of(self.user)


def _refuse(
    exc: ToolHubError,
    *,
    caller: Caller,
    tool: Tool | None,
    tool_ref: Any,
    status: str = ExecutionStatus.DENIED,
    message: str | None = None,
    inputs: Any = None,
    raw_input: str = "",
    secrets: Iterable[str] = (),
) -> ToolHubError:
    """Record a refused call (reason = the error's code) and return the error to raise."""
    execution = _record_refusal(
        caller=caller,
        tool=tool,
        requested=str(tool_ref),
        status=status,
        reason=exc.code,
        message=message or exc.message,
        inputs=inputs,
        raw_input=raw_input,
        secrets=secrets,
    )
    exc.extra = {"execution_id": str(execution.pk)}
    return exc


def _record_refusal(
    *,
    caller: Caller,
    tool: Tool | None,
    requested: str,
    status: str,
    reason: str,
    message: str,
    inputs: Any = None,
    raw_input: str = "",
    secrets: Iterable[str] = (),
) -> Execution:
    """Write a refused call's row and audit event. ``secrets``: every text form of
    the secret values given in the call, removed from the message, the raw text
    and the arguments kept (wherever another key or argument repeats them)."""
    secrets = list(secrets)
    kept = without_secret_values(json_safe(inputs), secrets) if isinstance(inputs, dict) else None
    now = timezone.now()
    execution = _call_record(
        caller,
        tool,
        requested,
        status=status,
        reason_code=reason,
        # Refused input is kept as received, minus what no record can hold.
        input_data=kept,
        raw_input=without_secrets(raw_input, secrets, RAW_INPUT_LIMIT)[:RAW_INPUT_LIMIT],
        input_hash=input_hash(kept) if kept is not None else "",
        error_message=without_secrets(message, secrets, MESSAGE_LIMIT)[:MESSAGE_LIMIT],
        created_at=now,  # decided and finished at the same moment, never before
        finished_at=now,
    )
    rows.insert_together(execution, execution_audit_event(execution, f"execution.{status}"))
    executions_audited(execution)
    return execution


def _call_record(
    caller: Caller, tool: Tool | None, requested: Any, entries=None, **fields
) -> Execution:
    """An unsaved Execution naming the tool, the caller and the request, plus ``fields``."""
    ctx = context.current()
    return Execution(
        tool=tool,
        tool_name=tool.name if tool else "",
        tool_version=tool.version if tool else "",
        tool_type=tool.type if tool else "",
        requested_tool=storable_text(str(requested))[:200],
        agent=caller.agent,
        principal=caller.user,
        principal_name=caller.name,
        # Four eyes holds against who owned the agent then, whoever owns it later.
        agent_owner_id=caller.agent.owner_id if caller.agent is not None else None,
        role=caller.role,
        roles_used=_role_names(caller, tool, entries),
        request_id=ctx.request_id,
        client_address=ctx.client_address,
        **fields,
    )


def _role_names(caller: Caller, tool: Tool | None = None, entries=None) -> list[str]:
    """The roles the call acted with: those of the caller's (narrowed) roles that grant
    ``execute`` on the tool; when none does (a refusal, a right given to the person
    directly), all of the caller's roles."""
    if caller.role is not None:
        return [caller.role.name]
    if not caller.user:
        return []
    if tool is not None:
        granting = snapshot.cached(
            entries,
            ("roles_granting", caller.user.pk, tool.pk),
            lambda: access.roles_granting(caller.user, Action.EXECUTE, tool),
        )
        if granting:
            return list(granting)
    return access.role_names_of(caller.user)


def resolve_caller(user, role_ref: Any = None) -> Caller:
    agent = getattr(user, "agent", None)
    if role_ref in (None, ""):
        return Caller(user=user, agent=agent, role=None, role_ids=None)
    qs = Group.objects.all()
    role_id = parse_id(role_ref)  # ASCII digits only: other scripts' digits are a name
    role = (
        qs.filter(pk=role_id).first()
        if role_id is not None and role_id <= 2**31 - 1  # Group's id is a 32-bit integer
        else qs.filter(name=str(role_ref)).first()
    )
    caller = Caller(user=user, agent=agent, role=None, role_ids=None)
    if role is None or role.pk not in access.role_ids_of(user):
        # Same answer for an unknown role and one the caller is not in.
        raise PermissionDenied(
            f"You are not a member of role '{role_ref}'.", code="role_not_member"
        )
    caller.role, caller.role_ids = role, [role.pk]
    return caller


class AmbiguousToolName(Conflict):
    code = "tool_name_ambiguous"


def _find_tool(caller: Caller, tool_ref: str, entries) -> snapshot.ToolSpec | None:
    """The tool ``tool_ref`` names, if the caller may read it (None otherwise: one answer, 404).

    A name a discovery format listed a tool under (``registry.formats.provider_name``)
    names that tool too; should it stand for two tools the caller may read, the call
    is refused (``AmbiguousToolName``), never given to either."""
    spec = snapshot.tool_spec(tool_ref, entries)
    if spec is None:
        return _tool_listed_as(caller, tool_ref, entries)
    if not _may_read(caller, spec, entries):
        return None
    return spec


def _may_read(caller: Caller, spec: snapshot.ToolSpec, entries) -> bool:
    return access.can(
        caller.user, Action.READ, spec.tool, role_ids=caller.role_ids, entries=entries
    )


def _tool_listed_as(caller: Caller, tool_ref: Any, entries) -> snapshot.ToolSpec | None:
    names = snapshot.cached(
        entries,
        ("tool-listed-as", str(tool_ref)),
        lambda: tuple(selectors.tool_names_listed_as(str(tool_ref))) or None,
        keep_none=False,  # any text may be asked for: only names of tools are kept
    )
    specs = [snapshot.tool_spec(name, entries) for name in names or ()]
    readable = [spec for spec in specs if spec is not None and _may_read(caller, spec, entries)]
    if len(readable) > 1:
        raise AmbiguousToolName(
            f"'{tool_ref}' stands for more than one tool: give the tool's tool_id instead."
        )
    return readable[0] if readable else None


def execution_request(
    *,
    user,
    tool_ref: str,
    arguments: Any,
    wait: float | bool | None = None,
    role_ref: Any = None,
    registry: dict | object | None = snapshot.UNREAD,
    on_admitted: Callable[[Execution], None] | None = None,
) -> Execution:
    """Decide on one call and, if admitted, run it. See the module docstring for the steps.

    ``registry``: the in-memory registry entries the caller's authentication
    already validated in this request (saves reading the generation again).
    ``on_admitted``: called with the execution once its row is written, before
    the tool can run (an ``Idempotency-Key`` is bound to it there).
    """
    entries = snapshot.resolve(registry)
    try:
        caller = resolve_caller(user, role_ref)
    except PermissionDenied as exc:
        caller = Caller(user=user, agent=getattr(user, "agent", None), role=None, role_ids=None)
        # The refusal names the tool when the caller may read it with its own roles, so
        # the record can be found by tool; otherwise it stays unnamed (as a 404 would).
        try:
            spec = _find_tool(caller, tool_ref, entries)
        except AmbiguousToolName:
            spec = None
        tool = spec.tool if spec is not None else None
        raise _refuse(exc, caller=caller, tool=tool, tool_ref=tool_ref) from None

    try:
        spec = _find_tool(caller, tool_ref, entries)
    except AmbiguousToolName as exc:
        raise _refuse(exc, caller=caller, tool=None, tool_ref=tool_ref) from None
    if spec is None:
        raise _refuse(
            NotFound("Tool not found.", code="tool_not_found"),
            caller=caller,
            tool=None,
            tool_ref=tool_ref,
        )
    tool = spec.tool
    if not tool.is_active:
        raise _refuse(
            Conflict(f"Tool '{tool.name}' is deactivated.", code="tool_inactive"),
            caller=caller,
            tool=tool,
            tool_ref=tool_ref,
        )
    if not access.can(caller.user, Action.EXECUTE, tool, role_ids=caller.role_ids, entries=entries):
        raise _refuse(
            PermissionDenied(f"You may read '{tool.name}' but not execute it."),
            caller=caller,
            tool=tool,
            tool_ref=tool_ref,
        )

    outcome = validate_arguments(arguments, spec.input_schema)
    secret_names = spec.secret_names
    if not outcome.ok:
        stored = (
            {k: v for k, v in outcome.value.items() if k not in secret_names}
            if isinstance(outcome.value, dict)
            else None
        )
        problems, forms = problems_without_secrets(outcome.errors, outcome.value, secret_names)
        raw_input = ""
        if stored is None and outcome.raw_text:
            raw_input = RAW_INPUT_NOT_KEPT if secret_names else outcome.raw_text
        count = len(problems)
        raise _refuse(
            InvalidArguments(
                f"The arguments do not match the tool's input schema "
                f"({count} problem{'s' if count != 1 else ''}).",
                details=problems,
            ),
            caller=caller,
            tool=tool,
            tool_ref=tool_ref,
            status=ExecutionStatus.INVALID,
            message="; ".join(f"{e['path']}: {e['message']}" for e in problems),
            inputs=stored,
            raw_input=raw_input,
            secrets=forms,
        )

    inputs = outcome.value
    secrets = {k: v for k, v in inputs.items() if k in secret_names}
    stored = {k: v for k, v in inputs.items() if k not in secret_names}

    # Governance controls, in order: rate limits, the approval gate, the result cache.
    try:
        quota = governance.rate_limit_admit(caller=caller, tool=tool, rules=spec.rules)
    except (governance.RateLimited, governance.ControlsUnavailable) as exc:
        raise _refuse(
            exc,
            caller=caller,
            tool=tool,
            tool_ref=tool_ref,
            inputs=stored,
            secrets=secret_forms(secrets.values()),
        ) from None

    digest = input_hash(stored)
    cached = None
    if governance.needs_approval(tool, stored):
        status = ExecutionStatus.PENDING_APPROVAL
    else:
        cached = governance.cached_result(tool, digest)
        status = ExecutionStatus.SUCCEEDED if cached else ExecutionStatus.QUEUED

    now = timezone.now()
    run_here, slots = False, []
    execution = _call_record(
        caller,
        tool,
        tool_ref,
        entries,
        status=status,
        input_data=stored,
        input_hash=digest,
        sealed_secrets=crypto.encrypt_json(secrets) if secrets and not cached else "",
        chars_in=len(canonical_json(stored)),
        cost=Decimal(0) if cached else cost_of(tool),  # a cached answer calls nothing
        created_at=now,
        queued_at=now if status == ExecutionStatus.QUEUED else None,
    )
    if cached:
        execution.cached_from_id = cached["execution_id"]
        execution.output_data = cached["output_data"]
        execution.output_truncated = cached["output_truncated"]
        execution.output_artifact = cached["output_artifact"] or ""
        execution.output_size = cached["output_size"]
        execution.chars_out = cached["chars_out"] or 0
        execution.started_at = execution.finished_at = now
        execution.execution_time_ms = 0.0
    if status == ExecutionStatus.QUEUED and runs_inline(tool, wait):
        # A caller that waits has its call run in this process after the
        # durable INSERT, skipping the broker hop (bench/README.md): the same
        # slots, retries and recording. When a slot is full it queues instead.
        taken = runner.take_slots(execution, tool)
        run_here, slots = taken is not None, taken or []
    if run_here:
        # Admitted and started in one write: the row is durable as `running`
        # before the tool runs; the reaper ends it if this process dies.
        runner.mark_running(execution, tool, now)
        status = execution.status
    try:
        _write_admitted(execution, tool, digest, now, on_admitted)
    except BaseException:
        if slots:
            runner.release_slots(execution, slots)
        raise
    if execution.error_type == QueueUnavailable.code:
        raise queue_refusal(execution)
    execution = run_or_wait(execution, spec, wait=wait, run_here=run_here, slots=slots)
    execution.quota = quota
    return execution


def _named(path: str, names: Iterable[str]) -> str | None:
    """The argument in ``names`` a problem's ``path`` is at or below, if any."""
    for name in names:
        if path == name or path.startswith((f"{name}.", f"{name}[")):
            return name
    return None


def problems_without_secrets(
    problems: list[dict], arguments: Any, secret_names: Iterable[str]
) -> tuple[list[dict], list[str]]:
    """``problems`` with no trace of the values given for secret parameters, and
    the text forms of those values (``secret_forms``) no record may hold either.

    A problem at (or below) a secret parameter that was given a value names the
    parameter and what it expects, never the value nor a path into it: only what
    the tool's schema says. Any other problem (below another argument, about the
    arguments as a whole, a missing argument) has every form of the secret
    values redacted: another argument may repeat a secret.
    """
    arguments = arguments if isinstance(arguments, dict) else {}
    given = {k: v for k, v in arguments.items() if k in secret_names}
    described: list[tuple[str, dict]] = []
    merged: set[tuple[str, str]] = set()
    for problem in problems:
        path = str(problem.get("path", ""))
        name = _named(path, given)
        if name is None:
            described.append(("other", problem))
            continue
        expected = str(problem.get("expected") or "a valid value")
        if (name, expected) in merged:  # problems below one secret parameter merge
            continue
        merged.add((name, expected))
        message = f"Expected {expected} ({VALUE_NOT_SHOWN})."
        described.append(("secret", {"path": name, "message": message, "expected": expected}))
    # Text built from the schema alone (names, expectations, fixed wording) is
    # known to every caller: a value found inside it reveals nothing there, and
    # redacting it would only garble the parameter's name.
    public = "\n".join(text for kind, p in described if kind == "secret" for text in p.values())
    forms = [form for form in secret_forms(given.values()) if form not in public]
    cleaned: list[dict] = []
    for kind, problem in described:
        if kind == "other" and forms:
            problem = {
                key: without_secrets(text, forms) if isinstance(text, str) else text
                for key, text in problem.items()
            }
        cleaned.append(problem)
    return cleaned, forms


def secret_forms(values: Iterable[Any]) -> list[str]:
    """Every text form a message could quote the secret ``values`` in, longest first:
    each value's ``str``, ``repr`` and JSON, the same for the strings and numbers
    inside it (the first ``_MAX_SECRET_SCALARS``), as given and as a record
    stores text, and the encoded forms redaction looks for in outputs
    (``with_encoded_forms``: URL-encoded, base64, re-cased) of each string and
    number. Keys inside a value are in the value's own forms; alone they
    are names, too often ordinary words. Forms shorter than
    ``_MIN_FORM_LENGTH`` are left out."""
    values = list(values)
    forms: set[str] = set()
    for part in [*values, *_scalars(values, _MAX_SECRET_SCALARS)]:
        if part is None or isinstance(part, bool):
            continue  # nothing secret in true, false or null
        if isinstance(part, str | int | float):
            forms.update(storable_text(f) for f in with_encoded_forms([str(part)]))
        for render in (str, repr, json.dumps, _json_unescaped):
            try:
                text = render(part)
            except (TypeError, ValueError, RecursionError):
                continue
            forms.update((text, storable_text(text)))
    return sorted((f for f in forms if len(f) >= _MIN_FORM_LENGTH), key=len, reverse=True)


def _json_unescaped(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _scalars(values: list[Any], limit: int) -> list[Any]:
    """Up to ``limit`` strings and numbers inside the containers ``values`` (no recursion)."""
    found: list[Any] = []
    stack = [v for v in reversed(values) if isinstance(v, dict | list | tuple)]
    seen: set[int] = set()
    while stack and len(found) < limit:
        item = stack.pop()
        if isinstance(item, dict | list | tuple):
            if id(item) not in seen:
                seen.add(id(item))
                children = list(item.values() if isinstance(item, dict) else item)
                stack.extend(reversed(children))
        else:
            found.append(item)
    return found


def without_secrets(text: str, forms: list[str], limit: int | None = None) -> str:
    """``text``, cut to ``limit`` characters, with each of ``forms`` replaced by
    ``REDACTED`` (longest first: no part of a longer form is left over).

    Occurrences are masked in place before the cut, so no position moves: a
    form cut through at the end is cut away whole, never left as a prefix.
    """
    text = storable_text(text)
    if limit is not None:
        text = text[: limit + max((len(f) for f in forms), default=0)]
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, _MASK * len(form))
    if limit is not None:
        text = text[:limit]
    return _MASKED.sub(REDACTED, text) if forms else text


def without_secret_values(value: Any, forms: list[str]) -> Any:
    """``value`` (plain JSON) with ``forms`` redacted from every string and key, at any
    depth; a number whose text holds one becomes the redacted text."""
    if not forms:
        return value
    if isinstance(value, str):
        return without_secrets(value, forms)
    if isinstance(value, int | float) and not isinstance(value, bool):
        text = str(value)
        cleaned = without_secrets(text, forms)
        return value if cleaned == text else cleaned
    if isinstance(value, dict):
        return {
            without_secrets(str(k), forms): without_secret_values(v, forms)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [without_secret_values(v, forms) for v in value]
    return value


def _write_admitted(
    execution: Execution, tool: Tool, digest: str, now, on_admitted: Callable | None = None
) -> None:
    """Write an admitted call's row and its audit event, tell ``on_admitted``, then
    queue it after the commit (so nothing runs it before ``on_admitted`` knows it)."""
    status = execution.status
    action = f"execution.{status}"
    if status == ExecutionStatus.PENDING_APPROVAL:
        with transaction.atomic():
            EXECUTION_ROWS.insert(execution)
            Approval.objects.create(
                execution=execution,
                input_hash=digest,
                expires_at=now + timedelta(seconds=tool.approval_ttl_seconds),
            )
            audit_execution(execution, action)
    else:
        # The row and its audit event together (one statement on PostgreSQL).
        rows.insert_together(execution, execution_audit_event(execution, action))
        executions_audited(execution)
    if on_admitted is not None:
        on_admitted(execution)
    if status == ExecutionStatus.QUEUED:
        # ``enqueue`` as this module names it now (a benchmark or test may stand in for it).
        transaction.on_commit(lambda: dispatch_admitted(execution, tool, publish=enqueue))


def execution_cancel(*, actor, execution: Execution) -> Execution:
    """Cancel a call that has not started (queued or waiting for approval).

    Only the caller, the agent's owner and platform admins may cancel; a
    reviewer sees every call but changes none.
    """
    allowed = (
        execution.principal_id == actor.pk
        or (execution.agent_id is not None and execution.agent.owner_id == actor.pk)
        or access.is_platform_admin(actor)
    )
    if not allowed:
        raise PermissionDenied("Only the caller, the agent's owner or a platform admin may cancel.")
    with transaction.atomic():  # the call, its approval and their events together
        cancelled = transitions.execution_move(
            execution.pk,
            from_statuses=[ExecutionStatus.QUEUED, ExecutionStatus.PENDING_APPROVAL],
            to=ExecutionStatus.CANCELLED,
            actor=actor,
            notify_waiters=False,
            finished_at=timezone.now(),
            **transitions.not_run(),
        )
        if cancelled is None:
            execution.refresh_from_db()
            raise Conflict(
                f"Execution is {execution.status}; only queued or pending calls can be cancelled.",
                code="not_cancellable",
            )
        # Its approval is closed too: nobody may approve a call that was cancelled.
        transitions.approvals_close_for(cancelled, actor=actor)
    notify.notify_done(execution.pk)
    return cancelled
