"""The one domain exception type. The API maps it to HTTP in one place."""

from __future__ import annotations

import copy
from typing import Any


class ToolHubError(Exception):
    """A failure a caller can act on: a code, a message, optional details."""

    status_code = 400
    code = "bad_request"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        details: Any = None,
        extra: dict[str, Any] | None = None,
    ):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.details = details
        self.extra: dict[str, Any] = dict(extra or {})  # more keys of the error body

    def with_extra(self, **extra: Any) -> ToolHubError:
        """This error with more keys in its body: a new error of the same kind (its
        status, code, details and headers), this one left as it is."""
        answered = copy.copy(self)
        answered.extra = {**self.extra, **extra}
        return answered


class NotFound(ToolHubError):
    status_code = 404
    code = "not_found"


class PermissionDenied(ToolHubError):
    status_code = 403
    code = "permission_denied"


class Conflict(ToolHubError):
    status_code = 409
    code = "conflict"


class InvalidInput(ToolHubError):
    """Input that is well-formed JSON but breaks a rule (400, field named)."""

    status_code = 400
    code = "validation_error"
