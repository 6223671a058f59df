"""ToolHub's URLs with the demo sandbox mounted, as ./scripts/demo serves them."""

from django.urls import include, path

from toolhub.urls import handler404, handler500  # noqa: F401
from toolhub.urls import urlpatterns as toolhub_urlpatterns

urlpatterns = [path("demo-sandbox/", include("toolhub.demo_sandbox")), *toolhub_urlpatterns]
