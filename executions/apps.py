from django.apps import AppConfig


class ExecutionsConfig(AppConfig):
    name = "executions"
    verbose_name = "Executions"

    def ready(self):
        # The registry admin syncs MCP servers through this hook (registry never imports executions).
        from executions.mcp_sync import mcp_server_sync
        from registry.services.mcp import mcp_sync_handler_register

        mcp_sync_handler_register(mcp_server_sync)

        # audit_verify compares each finished execution with its latest event's hash.
        from executions.services.records import altered_executions
        from registry.services.audit_chain import record_check_register

        record_check_register(altered_executions)
