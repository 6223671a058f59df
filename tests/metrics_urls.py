"""The project's URLs plus /metrics, /api/v1/stats and the admin dashboard (until wired)."""

from django.contrib import admin
from django.urls import include, path

from executions.admin_dashboard import dashboard_view
from executions.api import stats_views
from toolhub.metrics import metrics_view
from toolhub.urls import handler404, handler500  # noqa: F401
from toolhub.urls import urlpatterns as project_urlpatterns

urlpatterns = [
    path("metrics", metrics_view, name="metrics"),
    path("api/v1/", include(stats_views.urlpatterns)),
    # Before admin.site.urls: the admin's catch-all would answer this path first.
    path("admin/dashboard/", admin.site.admin_view(dashboard_view), name="toolhub-dashboard"),
    *project_urlpatterns,
]
