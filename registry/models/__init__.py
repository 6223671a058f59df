from registry.models.audit import AuditEvent
from registry.models.tokens import ApiToken
from registry.models.tools import Tool, ToolConfig, ToolParameter

__all__ = ["ApiToken", "AuditEvent", "Tool", "ToolConfig", "ToolParameter"]
