from django.urls import path

from registry.api import views

urlpatterns = [
    path("tools", views.ToolListView.as_view(), name="tool-list"),
    path(
        "tools/parameters/<uuid:parameter_id>",
        views.ToolParameterDetailView.as_view(),
        name="tool-parameter-detail",
    ),
    path("tools/<uuid:tool_id>", views.ToolDetailView.as_view(), name="tool-detail"),
    path("tools/<uuid:tool_id>/schema", views.ToolSchemaView.as_view(), name="tool-schema"),
    path(
        "tools/<uuid:tool_id>/parameters",
        views.ToolParameterListView.as_view(),
        name="tool-parameter-list",
    ),
    path(
        "tools/<uuid:tool_id>/configs", views.ToolConfigListView.as_view(), name="tool-config-list"
    ),
    path(
        "tools/<uuid:tool_id>/configs/<str:config_key>",
        views.ToolConfigDetailView.as_view(),
        name="tool-config-detail",
    ),
]

from registry.api import agent_views, discovery_views, grant_views, role_views  # noqa: E402

urlpatterns += [
    path("roles", role_views.RoleListView.as_view(), name="role-list"),
    path("roles/<int:role_id>", role_views.RoleDetailView.as_view(), name="role-detail"),
    path("agents", agent_views.AgentListView.as_view(), name="agent-list"),
    path("agents/<uuid:agent_id>", agent_views.AgentDetailView.as_view(), name="agent-detail"),
    path(
        "agents/<uuid:agent_id>/tokens",
        agent_views.AgentTokenListView.as_view(),
        name="agent-token-list",
    ),
    path(
        "agents/<uuid:agent_id>/tokens/<int:token_id>",
        agent_views.AgentTokenDetailView.as_view(),
        name="agent-token-detail",
    ),
    path("permissions", grant_views.GrantListView.as_view(), name="grant-list"),
    path("permissions/bulk", grant_views.GrantBulkView.as_view(), name="grant-bulk"),
    path(
        "permissions/tool/<uuid:tool_id>",
        grant_views.GrantsByToolView.as_view(),
        name="grant-by-tool",
    ),
    path(
        "permissions/role/<int:role_id>",
        grant_views.GrantsByRoleView.as_view(),
        name="grant-by-role",
    ),
    path("permissions/<uuid:grant_id>", grant_views.GrantDetailView.as_view(), name="grant-detail"),
    path("registry/me", discovery_views.RegistryMeView.as_view(), name="registry-me"),
    path(
        "registry/by-role/<int:role_id>",
        discovery_views.RegistryByRoleView.as_view(),
        name="registry-by-role",
    ),
    path(
        "registry/by-role-name/<str:role_name>",
        discovery_views.RegistryByRoleView.as_view(),
        name="registry-by-role-name",
    ),
    path(
        "registry/check-permission/<uuid:tool_id>/<int:role_id>",
        discovery_views.CheckPermissionView.as_view(),
        name="registry-check-permission",
    ),
]

from registry.api import import_views, mcp_views  # noqa: E402

urlpatterns += [
    path("mcp-servers", mcp_views.MCPServerListView.as_view(), name="mcp-server-list"),
    path(
        "mcp-servers/<uuid:server_id>",
        mcp_views.MCPServerDetailView.as_view(),
        name="mcp-server-detail",
    ),
    path(
        "mcp-servers/<uuid:server_id>/sync",
        mcp_views.MCPServerSyncView.as_view(),
        name="mcp-server-sync",
    ),
    path("tools/import", import_views.ToolImportView.as_view(), name="tool-import"),
]

from registry.api import limits_views as lv  # noqa: E402

urlpatterns += [
    path("rate-limits", lv.RateLimitListView.as_view(), name="rate-limit-list"),
    path("rate-limits/<uuid:rule_id>", lv.RateLimitDetailView.as_view(), name="rate-limit-detail"),
]

from registry.api import guard_views as gv  # noqa: E402

urlpatterns += [
    path("guards", gv.GuardListView.as_view(), name="guard-list"),
    path("guards/<uuid:guard_id>", gv.GuardDetailView.as_view(), name="guard-detail"),
]

from registry.api import audit_chain_views as acv  # noqa: E402

urlpatterns += [
    path("audit/verify", acv.AuditVerifyView.as_view(), name="audit-verify"),
    path("audit/head", acv.AuditHeadView.as_view(), name="audit-head"),
]

from registry.api import audit_views  # noqa: E402

urlpatterns += [
    path("audit", audit_views.AuditListView.as_view(), name="audit-list"),
    path("audit/export", audit_views.AuditExportView.as_view(), name="audit-export"),
]

from registry.api import toolset_views as tsv  # noqa: E402

urlpatterns += [
    path("toolsets", tsv.ToolsetListView.as_view(), name="toolset-list"),
    path("toolsets/<uuid:toolset_id>", tsv.ToolsetDetailView.as_view(), name="toolset-detail"),
]

from registry.api import definition_views as dv  # noqa: E402

urlpatterns += [
    path(
        "tools/<uuid:tool_id>/definition", dv.ToolDefinitionView.as_view(), name="tool-definition"
    ),
    path(
        "tools/<uuid:tool_id>/definition/approve",
        dv.ToolDefinitionApproveView.as_view(),
        name="tool-definition-approve",
    ),
    path(
        "tools/<uuid:tool_id>/definition/reject",
        dv.ToolDefinitionRejectView.as_view(),
        name="tool-definition-reject",
    ),
    path(
        "mcp-servers/<uuid:server_id>/drift",
        dv.MCPServerDriftView.as_view(),
        name="mcp-server-drift",
    ),
]
