"""Probes, request ids, and the offline API documentation."""

from __future__ import annotations

import logging
import re

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_healthz_and_readyz():
    client = Client()
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["checks"]["database"] == "ok"


def test_request_id_is_generated_or_echoed():
    client = Client()
    generated = client.get("/healthz")["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", generated)
    assert (
        client.get("/healthz", HTTP_X_REQUEST_ID="req-12345678")["X-Request-ID"] == "req-12345678"
    )
    # Anything unsafe is replaced rather than reflected.
    assert client.get("/healthz", HTTP_X_REQUEST_ID="<script>")["X-Request-ID"] != "<script>"


def test_log_lines_of_4xx_answers_carry_the_request_id(caplog):
    """Django logs "Not Found: …" after the middleware returned; the line still names the id."""
    from toolhub.middleware import RequestIDLogFilter

    caplog.set_level(logging.WARNING, logger="django.request")
    response = Client().get("/api/v1/tools/", HTTP_X_REQUEST_ID="req-4xx-line-1")
    assert response.status_code == 404
    (record,) = [r for r in caplog.records if r.name == "django.request"]
    RequestIDLogFilter().filter(record)
    assert record.request_id == "req-4xx-line-1"


def test_a_chunked_body_is_411_not_read_as_empty(staff_client):
    """Without Content-Length Django would see an empty body: say so instead."""
    response = staff_client.generic(
        "POST",
        "/api/v1/executions",
        "",
        "application/json",
        HTTP_TRANSFER_ENCODING="chunked",
    )
    assert response.status_code == 411
    assert response.json()["error"]["code"] == "length_required"
    schema = staff_client.get("/api/schema/?format=json").json()
    assert "411" in schema["paths"]["/api/v1/executions"]["post"]["responses"]


def test_swagger_ui_uses_no_cdn():
    html = Client().get("/docs/").content.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources, html
    assert all(not s.startswith(("http://", "https://", "//")) for s in sources), sources
    assert any("swagger-ui-bundle.js" in s for s in sources)
    for asset in sources:
        if asset.startswith("/static/"):
            response = Client().get(asset)
            assert response.status_code == 200, asset


def test_redoc_uses_no_cdn():
    html = Client().get("/redoc/").content.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert all(not s.startswith(("http://", "https://", "//")) for s in sources), sources


def test_openapi_schema_describes_the_api():
    response = Client().get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    for path in (
        "/api/v1/tools",
        "/api/v1/tools/{tool_id}",
        "/api/v1/tools/{tool_id}/parameters",
        "/api/v1/tools/parameters/{parameter_id}",
        "/api/v1/tools/{tool_id}/configs",
        "/api/v1/tools/{tool_id}/configs/{config_key}",
        "/api/v1/tools/{tool_id}/schema",
    ):
        assert path in schema["paths"], path
    assert "bearerAuth" in schema["components"]["securitySchemes"]


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_probes_answer_other_methods_with_a_json_405(path, method):
    response = getattr(Client(enforce_csrf_checks=True), method)(path)
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"
    assert response.json()["error"]["code"] == "method_not_allowed"


@pytest.mark.parametrize(
    "path, hint",
    [
        ("/api/v1/nope", "/api/schema/"),
        ("/api/v1/tools/", "no trailing slash: /api/v1/tools. The endpoints"),
        ("/api/v1/tools/not-a-uuid", "are UUIDs"),
        ("/api/v1/roles/abc", "are UUIDs (roles and tokens: numbers)"),
        ("/api/v1/tools/" + "0" * 32 + "/nothing-here", "/api/schema/"),
        ("/api/v2/tools", "/api/schema/"),
    ],
)
@pytest.mark.parametrize("method", ["get", "post", "delete"])
@pytest.mark.parametrize("debug", [True, False])
def test_unknown_api_paths_are_json_404s_naming_the_slip(settings, path, hint, method, debug):
    settings.DEBUG = debug  # the demo runs with DEBUG on: still JSON, never an HTML page
    response = getattr(Client(), method)(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == "not_found" and hint in error["message"]


def test_the_admin_is_branded_and_view_site_opens_the_api_docs(client, django_user_model):
    user = django_user_model.objects.create_superuser("brand-root", password="pw-brand-root-1")
    client.force_login(user)
    page = client.get("/admin/").content.decode()
    assert "<title>Governance | ToolHub</title>" in page
    assert '<a href="/admin/">ToolHub</a>' in page
    assert 'href="/docs/">View site' in page
    assert 'rel="icon"' in page


def test_the_root_and_the_favicon_answer_instead_of_a_404(client):
    root = client.get("/")
    assert root.status_code == 302 and root["Location"] == "/admin/"
    icon = client.get("/favicon.ico")
    assert icon.status_code == 302 and icon["Location"].endswith(".svg")
    assert "max-age=86400" in icon["Cache-Control"]


def test_the_admin_home_links_the_dashboard_for_those_who_may_open_it(client, django_user_model):
    root = django_user_model.objects.create_superuser("dash-root", password="pw-dash-root-1")
    client.force_login(root)
    page = client.get("/admin/").content.decode()
    assert 'href="/admin/dashboard/">Usage dashboard</a>' in page
    assert client.get("/admin/dashboard/").status_code == 200
    staff = django_user_model.objects.create_user("dash-staff", password="pw-x-1", is_staff=True)
    client.force_login(staff)
    assert "Usage dashboard" not in client.get("/admin/").content.decode()
