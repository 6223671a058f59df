from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerView

from toolhub import views
from toolhub.api.openapi.document import SchemaView
from toolhub.metrics import metrics_view

# Executions first: every governed call resolves its URL, and Django tries the
# patterns in order (no pattern of one module matches another module's paths).
api_v1 = [
    path("", include("executions.api.urls")),
    path("", include("registry.api.urls")),
    path("", include("executions.api.stats_views")),
]

# The admin is ToolHub's own: its name on every page, and "View site" opens the API docs.
admin.site.site_header = "ToolHub"
admin.site.site_title = "ToolHub"
admin.site.index_title = "Governance"
admin.site.site_url = "/docs/"

urlpatterns = [
    path("", views.home, name="home"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    path("admin/dashboard/", include("executions.admin_dashboard")),
    path("admin/", admin.site.urls),
    # OAuth 2.1 and OpenID Connect for MCP clients (registry.oauth): the server, with its
    # discovery documents at the root and its endpoints under /oauth/; the person's pages.
    path("", include("registry.oauth.urls", namespace="oauth2_provider")),
    path("", include("registry.oauth.urls_root")),
    # People's own upstream accounts: connecting, the providers' callbacks, disconnecting.
    path("accounts/upstream/", include("executions.accounts.urls")),
    # Single sign-on's sign-in and callback (404 while no identity provider is configured).
    path("accounts/", include("registry.sso.urls")),
    path("api/v1/", include(api_v1)),
    path("api/schema/", SchemaView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("redoc/", SpectacularRedocView.as_view(url_name="schema"), name="redoc"),
    # Last: any other /api/ path is a JSON 404 that names the likely slip.
    re_path(r"^api/", views.api_not_found),
]

# The demo's fake upstream APIs, mounted only when ./scripts/demo asks for them.
if settings.TOOLHUB_DEMO_SANDBOX:
    urlpatterns.insert(0, path("demo-sandbox/", include("toolhub.demo_sandbox")))

handler404 = "toolhub.views.handler404"
handler500 = "toolhub.views.handler500"
