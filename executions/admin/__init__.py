"""Admin for executions, approvals, and the tool page's test run."""

from executions.admin import approvals, executions, tools, upstream  # noqa: F401
