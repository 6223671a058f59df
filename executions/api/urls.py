from django.urls import path

from executions.api import approval_views, views

urlpatterns = [
    path("executions", views.ExecutionListView.as_view(), name="execution-list"),
    path(
        "executions/tool/<uuid:tool_id>",
        views.ExecutionsByToolView.as_view(),
        name="execution-by-tool",
    ),
    path(
        "executions/<uuid:execution_id>",
        views.ExecutionDetailView.as_view(),
        name="execution-detail",
    ),
    path(
        "executions/<uuid:execution_id>/output",
        views.ExecutionOutputView.as_view(),
        name="execution-output",
    ),
    path(
        "executions/<uuid:execution_id>/output/content/<int:index>",
        views.ExecutionOutputBlockView.as_view(),
        name="execution-output-block",
    ),
    path(
        "executions/<uuid:execution_id>/cancel",
        views.ExecutionCancelView.as_view(),
        name="execution-cancel",
    ),
    path("approvals", approval_views.ApprovalListView.as_view(), name="approval-list"),
    path(
        "approvals/<uuid:approval_id>",
        approval_views.ApprovalDetailView.as_view(),
        name="approval-detail",
    ),
    path(
        "approvals/<uuid:approval_id>/approve",
        approval_views.ApprovalDecisionView.as_view(),
        name="approval-approve",
    ),
    path(
        "approvals/<uuid:approval_id>/reject",
        approval_views.ApprovalRejectView.as_view(),
        name="approval-reject",
    ),
]

from executions.api import export_views  # noqa: E402

urlpatterns += [
    path("executions/export", export_views.ExecutionExportView.as_view(), name="execution-export"),
]
