"""Admission: whether one call may run, decided before anything is written.

Steps, in order (docs/execution.md): who calls (the role asked for must be the
caller's, 403) → resolve the tool among those the caller may read, by name, id
or a name a discovery format listed it under (404; two such tools: 409) → in
the toolset the call was made through, if any (404 ``tool_not_in_toolset``) →
active (409) → ``execute`` permission (403) → not quarantined (409
``tool_definition_changed``) → validate and coerce the arguments (422) → a tool
acting with its caller's own upstream account: made for a person (403
``person_required``) who connected one (409 ``connection_required``) → rate limits
(429) → the before-guards (403 ``guard_denied``, or approval asked for) → the
approval gate (``pending_approval``) → the result cache. The answer is a
value, an ``Admission`` to record and dispatch; a call that may not run is
refused where that is decided: ``Refused`` is raised with its ``Refusal`` (the
error to answer, its ``code`` the error's, and what the record keeps), which the
pipeline records on its way out (``recording.refusal_write``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import Group

from executions.guards import engine as guards
from executions.models import ApprovalReason, ExecutionStatus
from executions.services import governance, upstream_accounts
from executions.services.execution_audit import input_hash
from executions.services.refusal_secrets import (
    RAW_INPUT_NOT_KEPT,
    problems_without_secrets,
    secret_forms,
)
from executions.services.sealed_inputs import Sealed, arguments_masked
from executions.validation import validate_arguments
from registry import authorization, selectors, snapshot
from registry.models import Action, Tool
from toolhub.api.params import parse_id
from toolhub.exceptions import Conflict, NotFound, PermissionDenied, ToolHubError


class InvalidArguments(ToolHubError):
    status_code = 422
    code = "invalid_arguments"


class GuardDenied(ToolHubError):
    """A before-guard refused the arguments; the message says what to change."""

    status_code = 403
    code = "guard_denied"


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
        return authorization.role_ids_of(self.user)


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
    if role is None or role.pk not in authorization.role_ids_of(user):
        # Same answer for an unknown role and one the caller is not in.
        raise PermissionDenied(
            f"You are not a member of role '{role_ref}'.", code="role_not_member"
        )
    caller.role, caller.role_ids = role, [role.pk]
    return caller


class DefinitionChanged(Conflict):
    """The tool is quarantined: its definition changed (or it is new on its server) and no
    platform admin has approved it yet (``registry.services.pinning``)."""

    code = "tool_definition_changed"

    @classmethod
    def of(cls, tool: Tool) -> DefinitionChanged:
        return cls(
            f"Tool '{tool.name}' is quarantined: its definition changed on its server (or it "
            "is new there) and waits for a platform admin's approval."
        )


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
    return authorization.can(
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


@dataclass(frozen=True)
class Refusal:
    """A call that may not run: the error to answer with and what its record keeps.

    ``message``: what the record keeps when it is not the error's message;
    ``secrets``: every text form of the secret values given, kept out of the record.
    """

    error: ToolHubError
    caller: Caller
    tool: Tool | None = None
    status: str = ExecutionStatus.DENIED
    message: str = ""
    inputs: Any = None
    raw_input: str = ""
    secrets: tuple[str, ...] = ()
    guard_decisions: tuple[dict, ...] = ()

    @property
    def code(self) -> str:
        return self.error.code


@dataclass(frozen=True)
class Admission:
    """A call that may go ahead: ``status`` is ``pending_approval``, ``succeeded`` (an
    answer from the cache, ``cached``) or ``queued``; ``quota`` is the tightest rate
    limit's state after it (the X-RateLimit-* headers)."""

    caller: Caller
    spec: snapshot.ToolSpec
    stored: dict[str, Any]  # the arguments as recorded: masked of the per-call secrets
    sealed: Sealed
    digest: str
    status: str
    cached: dict[str, Any] | None
    quota: governance.Quota | None
    guard_decisions: tuple[dict, ...] = ()
    # Why the call waits for a person (an ``ApprovalReason``; "" when it does not), and
    # the argument paths the schema's defaults filled in.
    approval_reason: str = ""
    defaulted: tuple[str, ...] = ()

    @property
    def tool(self) -> Tool:
        return self.spec.tool


class Refused(Exception):
    """Raised where admission refuses a call, with the ``refusal``: it ends admission."""

    def __init__(self, refusal: Refusal):
        super().__init__(refusal.code)
        self.refusal = refusal


def admission_decide(
    *,
    user,
    tool_ref: Any,
    arguments: Any,
    role_ref: Any = None,
    entries,
    toolset: str | None = None,
) -> Admission:
    """Decide on one call (the steps in the module docstring); nothing is written.
    A refusal is raised (``Refused``) by the step that decides it. ``toolset``: the
    slug of the toolset the call came through (``/mcp/<slug>``), whose tools it may name."""
    caller = _caller(user, role_ref, tool_ref, entries)
    spec = _runnable_tool(caller, tool_ref, entries, toolset)
    stored, sealed, defaulted = _valid_arguments(caller, spec, arguments)
    secrets = sealed.secrets
    _with_callers_account(caller, spec, stored, secrets)
    quota = _within_rate_limits(caller, spec.tool, spec.rules, stored, secrets)
    guarded = _guards_before(caller, spec, stored, secrets)
    digest = input_hash(stored)
    cached = None
    decisions = tuple(guarded.decisions)
    reason = governance.approval_reason(spec.tool, stored)
    if not reason and guarded.action == guards.GuardAction.REQUIRE_APPROVAL:
        reason = ApprovalReason.GUARD
    if reason:
        status = ExecutionStatus.PENDING_APPROVAL
    else:
        cached = governance.cached_result(spec.tool, digest, spec.guards, caller.name)
        status = ExecutionStatus.SUCCEEDED if cached else ExecutionStatus.QUEUED
        if cached:  # what the after-guards decided on the answer kept
            decisions += tuple(cached.get("guard_decisions") or ())
    return Admission(
        caller, spec, stored, sealed, digest, status, cached, quota, decisions, reason, defaulted
    )


def _caller(user, role_ref: Any, tool_ref: Any, entries) -> Caller:
    try:
        return resolve_caller(user, role_ref)
    except PermissionDenied as exc:
        caller = Caller(user=user, agent=getattr(user, "agent", None), role=None, role_ids=None)
        # The refusal names the tool when the caller may read it with its own roles, so
        # the record can be found by tool; otherwise it stays unnamed (as a 404 would).
        try:
            spec = _find_tool(caller, tool_ref, entries)
        except AmbiguousToolName:
            spec = None
        raise Refused(Refusal(exc, caller, spec.tool if spec else None)) from None


def _runnable_tool(
    caller: Caller, tool_ref: Any, entries, toolset: str | None = None
) -> snapshot.ToolSpec:
    """The tool the call names, if the caller may read it, it is in the toolset the call
    came through, it is active and the caller may execute it."""
    try:
        spec = _find_tool(caller, tool_ref, entries)
    except AmbiguousToolName as exc:
        raise Refused(Refusal(exc, caller)) from None
    if spec is None:
        raise Refused(Refusal(NotFound("Tool not found.", code="tool_not_found"), caller))
    tool = spec.tool
    if toolset is not None and not selectors.toolset_holds(toolset, tool.pk):
        error = NotFound(
            f"Tool '{tool.name}' is not in toolset '{toolset}'.", code="tool_not_in_toolset"
        )
        raise Refused(Refusal(error, caller, tool))
    if not tool.is_active:
        error = Conflict(f"Tool '{tool.name}' is deactivated.", code="tool_inactive")
        raise Refused(Refusal(error, caller, tool))
    if not authorization.can(
        caller.user, Action.EXECUTE, tool, role_ids=caller.role_ids, entries=entries
    ):
        error = PermissionDenied(f"You may read '{tool.name}' but not execute it.")
        raise Refused(Refusal(error, caller, tool))
    if tool.quarantined_at is not None:
        raise Refused(Refusal(DefinitionChanged.of(tool), caller, tool))
    return spec


def _valid_arguments(
    caller: Caller, spec: snapshot.ToolSpec, arguments: Any
) -> tuple[dict, Sealed, tuple[str, ...]]:
    """The arguments as the schema coerces them: those kept (masked of every per-call
    secret they repeat), what is sealed (the per-call secrets and the real values of the
    masked arguments), and the paths of the kept ones the schema's defaults filled in."""
    outcome = validate_arguments(arguments, spec.input_schema)
    if not outcome.ok:
        raise Refused(_invalid(caller, spec, outcome))
    names = spec.secret_names
    secrets = {k: v for k, v in outcome.value.items() if k in names}
    stored, unmasked = arguments_masked(
        {k: v for k, v in outcome.value.items() if k not in names}, secrets
    )
    defaulted = tuple(p for p in outcome.defaulted if p.split(".", 1)[0] not in names)
    return stored, Sealed(secrets, unmasked), defaulted


def _invalid(caller: Caller, spec: snapshot.ToolSpec, outcome) -> Refusal:
    secret_names = spec.secret_names
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
    error = InvalidArguments(
        f"The arguments do not match the tool's input schema "
        f"({count} problem{'s' if count != 1 else ''}).",
        details=problems,
    )
    return Refusal(
        error,
        caller,
        spec.tool,
        status=ExecutionStatus.INVALID,
        message="; ".join(f"{e['path']}: {e['message']}" for e in problems),
        inputs=stored,
        raw_input=raw_input,
        secrets=tuple(forms),
    )


def _with_callers_account(caller: Caller, spec: snapshot.ToolSpec, stored: dict, secrets: dict):
    """A tool that acts with its caller's own upstream account: the call is made for a
    person who has connected one (``upstream_accounts.connection_refusal``)."""
    error = upstream_accounts.connection_refusal(
        user=caller.user, agent=caller.agent, tool=spec.tool
    )
    if error is not None:
        refusal = Refusal(
            error, caller, spec.tool, inputs=stored, secrets=tuple(secret_forms(secrets.values()))
        )
        raise Refused(refusal)


def _within_rate_limits(caller: Caller, tool: Tool, rules, stored: dict, secrets: dict):
    try:
        return governance.rate_limit_admit(caller=caller, tool=tool, rules=rules)
    except (governance.RateLimited, governance.ControlsUnavailable) as exc:
        refusal = Refusal(
            exc, caller, tool, inputs=stored, secrets=tuple(secret_forms(secrets.values()))
        )
        raise Refused(refusal) from None


def _guards_before(
    caller: Caller, spec: snapshot.ToolSpec, stored: dict, secrets: dict
) -> guards.BeforeOutcome:
    """The tool's before-guards on the arguments kept (per-call secrets are not shown
    to them); a denial ends admission as a refusal naming the guard."""
    outcome = guards.run_before(spec.guards, tool=spec.tool, arguments=stored, caller=caller.name)
    if outcome.action != guards.GuardAction.DENY:
        return outcome
    error = GuardDenied(
        f"Refused by guard '{outcome.guard}': {outcome.message}",
        details=[{"guard": outcome.guard, "message": outcome.message}],
    )
    refusal = Refusal(
        error,
        caller,
        spec.tool,
        inputs=stored,
        secrets=tuple(secret_forms(secrets.values())),
        guard_decisions=tuple(outcome.decisions),
    )
    raise Refused(refusal)
