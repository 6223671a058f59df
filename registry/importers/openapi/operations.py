"""One operation as a ``ToolSpec``: its name, description, configs and metadata."""

from __future__ import annotations

import logging
import re
from typing import Any

from registry.importers import naming
from registry.importers.openapi.inputs import (
    _PLACEHOLDER,
    _add_body_rows,
    _add_parameter_rows,
    _add_undeclared_placeholders,
    _declared_parameters,
    _Inputs,
)
from registry.importers.openapi.operation_context import OperationContext
from registry.importers.openapi.selection import operation_key
from registry.importers.specs import ToolSpec
from registry.models.tools import ToolType

logger = logging.getLogger("registry.importers.openapi")

META_NAMESPACE = "openapi_namespace"
META_OPERATION = "openapi_operation"
META_REMOVED = "openapi_removed"


def _raw_name(method: str, path: str, operation: dict) -> str:
    operation_id = operation.get("operationId")
    if isinstance(operation_id, str) and operation_id.strip():
        return operation_id.strip()
    return re.sub(r"[^A-Za-z0-9]+", "_", f"{method}_{path}").strip("_")


def _translate_operation(
    op: OperationContext, *, path: str, method: str, **kwargs
) -> ToolSpec | None:
    """``_operation_spec``, with a shape the checks did not foresee reported as an error
    for this operation, not a server error."""
    try:
        return _operation_spec(op, path=path, method=method, **kwargs)
    except (TypeError, AttributeError, ValueError, KeyError) as exc:
        # Only the exception type is logged (its message may quote the document).
        logger.warning("OpenAPI import: %s while translating an operation", type(exc).__name__)
        op.parsed.errors.append(
            op.doc.problem(
                op.path,
                f"cannot translate operation {method.upper()} {path}: part of it "
                f"does not have the shape OpenAPI 3 expects ({type(exc).__name__})",
            )
        )
        return None


def _operation_metadata(operation: dict, namespace: str, key: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "source": "openapi",
        META_NAMESPACE: namespace,
        META_OPERATION: key,
    }
    tags = operation.get("tags")
    if isinstance(tags, list) and tags and isinstance(tags[0], str):
        metadata["category"] = tags[0]
    return metadata


def _operation_spec(
    op: OperationContext,
    *,
    path: str,
    method: str,
    operation: dict,
    shared: list,
    base_url: str,
    namespace: str,
) -> ToolSpec | None:
    parameters = _declared_parameters(op, operation, shared)
    inputs = _Inputs(path)
    placeholders = _PLACEHOLDER.findall(path)
    _add_parameter_rows(op, parameters, placeholders, inputs)
    _add_undeclared_placeholders(op, parameters, placeholders, inputs)
    configs: dict[str, Any] = {"base_url": base_url, "endpoint": inputs.endpoint}
    configs["method"] = method.upper()
    _add_body_rows(op, operation, configs, inputs)
    for note in inputs.notes:
        op.warn(op.path, note)
    if op.failed:
        return None
    summary = operation.get("summary")
    description = operation.get("description")
    text = summary if isinstance(summary, str) and summary.strip() else description
    key = operation_key(method, path)
    return ToolSpec(
        path=op.path,
        document=op.doc,
        name=naming.namespaced(namespace, _raw_name(method, path, operation)),
        type=ToolType.HTTP,
        fields={"description": text.strip() if isinstance(text, str) else ""},
        metadata=_operation_metadata(operation, namespace, key),
        parameters=inputs.rows,
        configs=configs,
        operation=key,
    )
