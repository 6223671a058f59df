from django.apps import AppConfig
from django.conf import settings


class ExecutionsConfig(AppConfig):
    name = "executions"
    verbose_name = "Executions"

    def ready(self):
        # The registry admin syncs MCP servers through this hook (registry never imports executions).
        from executions.mcp_sync import mcp_definition_apply, mcp_server_sync
        from registry.services.mcp import mcp_sync_handler_register
        from registry.services.pinning import definition_apply_handler_register

        mcp_sync_handler_register(mcp_server_sync)
        definition_apply_handler_register(mcp_definition_apply)

        # Config checks at save time use the executors' own declarations; a key
        # rotation re-encrypts the per-call secrets sealed on calls not yet run.
        from executions.executors import executor_configs
        from executions.models import Execution
        from registry.hooks import EncryptedField, config_specs_register, encrypted_field_register

        config_specs_register(executor_configs)

        # /metrics reads the execution gauges from the database at each scrape.
        from executions.metrics import DatabaseCollector
        from toolhub.metrics import scrape_collector_register

        scrape_collector_register(DatabaseCollector())
        encrypted_field_register(
            EncryptedField("sealed call secrets", Execution.objects.all, "sealed_secrets")
        )

        # audit_verify compares each finished execution with its latest event's hash
        # (and finds records written without one), finds deleted records, and
        # compares each approval with its request and latest event, and each stored output
        # artifact with the digest its record holds.
        from executions.services.approval_verification import altered_approvals
        from executions.services.integrity import altered_artifacts
        from executions.services.verification import (
            altered_executions,
            deleted_executions,
        )
        from registry.services.audit_chain import record_check_register

        record_check_register(altered_executions)
        record_check_register(deleted_executions)
        record_check_register(altered_approvals)
        record_check_register(altered_artifacts)

        # The runner re-queues and tells agents through the one module that sends tasks;
        # it sends them by name, so the tasks are registered here in every process.
        import executions.tasks  # noqa: F401
        from executions.services import dispatch, runner

        runner.dispatcher_register(dispatch)

        # /readyz reports whether command tools can be sandboxed on this host.
        from executions.executors.command import sandbox_problem
        from toolhub.views import sandbox_check_register

        sandbox_check_register(sandbox_problem)

        load_python_tool_modules(settings.TOOLHUB_PYTHON_TOOL_MODULES)

        # Guard rows of kind "python" name functions registered here (checked on save).
        from executions.guards import guard_registry
        from registry.guard_configs import guard_functions_register

        guard_functions_register(guard_registry.stages)
        load_operator_modules(settings.TOOLHUB_GUARD_MODULES, "TOOLHUB_GUARD_MODULES")


def load_python_tool_modules(modules) -> None:
    """Import the operator's modules of ``@tool`` functions (``TOOLHUB_PYTHON_TOOL_MODULES``),
    so web and workers know the same functions; a module that does not import stops
    the process, naming it."""
    import executions.python_tools  # noqa: F401 - the registry and the built-in tools

    load_operator_modules(modules, "TOOLHUB_PYTHON_TOOL_MODULES")


def load_operator_modules(modules, setting: str) -> None:
    """Import the operator's modules named by ``setting``; one that does not import stops
    the process, naming it."""
    import importlib

    from django.core.exceptions import ImproperlyConfigured

    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as exc:
            raise ImproperlyConfigured(
                f"{setting}: module {module!r} does not import ({type(exc).__name__}: {exc})"
            ) from exc
