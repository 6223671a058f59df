"""Guards around every call: built-in checks and the operators' own functions.

For operators (``docs/governance.md``, "Guards"): register a function with
``@guard(stage="before")`` or ``@guard(stage="after")`` in a module listed in
``TOOLHUB_GUARD_MODULES``, then add a guard of kind ``python`` naming it. A
before-function answers ``None`` or a ``Violation``; an after-function answers
``Finding``s. ``executions.guards.testing`` runs one as ToolHub would.

The package, one concept a module: ``types`` (what functions get and answer),
``findings`` (places in an output, redaction), ``pii``, ``secrets``,
``injection`` and ``arguments`` (the built-in checks), ``registry`` (operators'
functions) and ``engine`` (running a tool's guards, recording decisions).
"""

from executions.guards.findings import Finding, texts
from executions.guards.registry import GuardDefinitionError, guard
from executions.guards.registry import registry as guard_registry
from executions.guards.types import GuardContext, Violation

__all__ = [
    "Finding",
    "GuardContext",
    "GuardDefinitionError",
    "Violation",
    "guard",
    "guard_registry",
    "texts",
]
