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
