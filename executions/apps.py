from django.apps import AppConfig
from django.conf import settings


class ExecutionsConfig(AppConfig):
    name = "executions"
    verbose_name = "Executions"

    def ready(self):
        """Fill the hooks of the lower layers (docs/development.md, "Hooks"): each is a place
        where registry or toolhub must call code of executions, which they cannot import.
        Everything within executions is a plain import."""
        from executions.executors import executor_configs
        from executions.executors.command import sandbox_problem
        from executions.guards import guard_registry
        from executions.mcp_sync import mcp_definition_apply, mcp_server_sync
        from executions.metrics import DatabaseCollector
        from executions.models import Execution
        from executions.services.approval_verification import altered_approvals
        from executions.services.integrity import altered_artifacts
        from executions.services.verification import altered_executions, deleted_executions
        from registry.guard_configs import guard_functions_register
        from registry.hooks import EncryptedField, config_specs_register, encrypted_field_register
        from registry.services.audit_chain import record_check_register
        from registry.services.mcp import mcp_sync_handler_register
        from registry.services.pinning import definition_apply_handler_register
        from toolhub.metrics import scrape_collector_register
        from toolhub.views import sandbox_check_register

        # The registry's admin and API sync MCP servers; the MCP client is ours.
        mcp_sync_handler_register(mcp_server_sync)
        # Approving a pinned definition writes it into the tool as the sync does.
        definition_apply_handler_register(mcp_definition_apply)
        # A tool config is checked at save by the declaration its executor reads at run time.
        config_specs_register(executor_configs)
        # A key rotation re-encrypts the per-call secrets sealed on calls not yet run.
        encrypted_field_register(
            EncryptedField("sealed call secrets", Execution.objects.all, "sealed_secrets")
        )
        # audit_verify checks each record against its latest event: finished executions
        # (and deleted ones), approvals, and stored output artifacts against their digest.
        record_check_register(
            altered_executions, deleted_executions, altered_approvals, altered_artifacts
        )
        # /metrics reads the execution gauges from the database at each scrape.
        scrape_collector_register(DatabaseCollector())
        # /readyz reports whether command tools can be sandboxed on this host.
        sandbox_check_register(sandbox_problem)
        # A guard row of kind "python" names a function registered with our guards.
        guard_functions_register(guard_registry.stages)

        # Tasks are sent by name (services.task_queue), so every process registers them.
        import executions.tasks  # noqa: F401

        # The operator's @tool and guard modules, imported alike in web and worker processes.
        load_python_tool_modules(settings.TOOLHUB_PYTHON_TOOL_MODULES)
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
