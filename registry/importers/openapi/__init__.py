"""OpenAPI 3.x: one ``http`` tool per operation.

The tool is named ``<namespace>__<operationId>`` (or ``<method>_<path>`` when
there is no operationId), sanitized to ``[a-zA-Z0-9_-]``, cut to 64 and made
unique. Its description is the operation's summary (else its description). Its
input parameters are the path and query parameters and the top-level
properties of a JSON (or form) request body, with local ``$ref``s resolved.
Configs: ``base_url``, ``endpoint`` (the path with its ``{placeholders}``) and
``method``. Header and cookie parameters, and bodies that are not objects,
are not mapped (each with a warning).

Tools remember their namespace and operation in ``tool_metadata``
(``openapi_namespace``, ``openapi_operation``), so a re-import updates them
(even when an operationId changed) and deactivates the operations that left
the specification.

An import may select operations (``Selection``: tags and operation ids or
``METHOD /path`` keys); the operations it leaves out are neither created nor
touched, and a selector that matches nothing is an error (a typo would
otherwise import nothing and say nothing)."""

from registry.importers.openapi.documents import (
    METHODS,
    check_target,
    parse_openapi,
)
from registry.importers.openapi.inputs import (
    FORM,
    LOCATIONS,
)
from registry.importers.openapi.operations import (
    META_NAMESPACE,
    META_OPERATION,
    META_REMOVED,
)
from registry.importers.openapi.selection import (
    Selection,
    operation_key,
)

__all__ = [
    "FORM",
    "LOCATIONS",
    "META_NAMESPACE",
    "META_OPERATION",
    "META_REMOVED",
    "METHODS",
    "Selection",
    "check_target",
    "operation_key",
    "parse_openapi",
]
