from registry.models.audit import AuditChainHead, AuditCheckpoint, AuditEvent
from registry.models.consents import Consent
from registry.models.grants import (
    Action,
    ToolGrant,
    ToolGroupObjectPermission,
    ToolUserObjectPermission,
)
from registry.models.guards import Guard, GuardAction, GuardKind, GuardStage
from registry.models.limits import RateLimitRule, RateLimitScope
from registry.models.mcp import MCPServer as MCPServer
from registry.models.principals import Agent, Role, RoleProfile
from registry.models.sso import SsoGroupMapping
from registry.models.tokens import ApiToken
from registry.models.tools import Tool, ToolConfig, ToolParameter
from registry.models.toolsets import Toolset
from registry.models.upstream import UpstreamConnection, UpstreamProvider
from registry.models.verification import (
    FINISHED_VERIFICATIONS,
    VerificationFinding,
    VerificationRun,
    VerificationStatus,
)

__all__ = [
    "FINISHED_VERIFICATIONS",
    "Action",
    "Agent",
    "ApiToken",
    "AuditChainHead",
    "AuditCheckpoint",
    "AuditEvent",
    "Consent",
    "Guard",
    "GuardAction",
    "GuardKind",
    "GuardStage",
    "RateLimitRule",
    "RateLimitScope",
    "Role",
    "RoleProfile",
    "SsoGroupMapping",
    "Tool",
    "ToolConfig",
    "ToolGrant",
    "ToolGroupObjectPermission",
    "ToolParameter",
    "ToolUserObjectPermission",
    "Toolset",
    "UpstreamConnection",
    "UpstreamProvider",
    "VerificationFinding",
    "VerificationRun",
    "VerificationStatus",
]
