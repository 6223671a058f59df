from django.urls import path

from executions.api import views

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
        "executions/<uuid:execution_id>/cancel",
        views.ExecutionCancelView.as_view(),
        name="execution-cancel",
    ),
]
