"""Malformed OpenAPI documents are import errors with paths, never server errors."""

from __future__ import annotations

import json
import logging

import pytest

from registry.importers.openapi import inputs as openapi
from registry.importers.run import import_content
from registry.models import Tool, ToolConfig

pytestmark = pytest.mark.django_db

URL = "/api/v1/tools/import"
PETS = {"base_url": "https://pets.example/v1", "namespace": "pets"}
CANARY = "robustness-canary-value"


def _doc(*, parameter=None, body=None) -> str:
    operation: dict = {"operationId": "op"}
    if parameter is not None:
        operation["parameters"] = [{"name": "p", **parameter}]
    if body is not None:
        operation["requestBody"] = body
    method = "post" if body is not None else "get"
    spec = {"openapi": "3.1.0", "paths": {"/a/{p}": {method: operation}}}
    return json.dumps(spec, indent=2)


def _body_schema(schema: dict) -> dict:
    return {"content": {"application/json": {"schema": schema}}}


GET = "/paths/~1a~1{p}/get"
POST = "/paths/~1a~1{p}/post"
SCHEMA = f"{POST}/requestBody/content/application~1json/schema"

# (document, path of the error, words the message must contain)
SHAPES = {
    "parameter in is a list": (
        _doc(parameter={"in": ["path"], "schema": {"type": "string"}}),
        f"{GET}/parameters/0/in",
        ["'in' must be", "found a list"],
    ),
    "parameter in is a mapping": (
        _doc(parameter={"in": {}, "schema": {"type": "string"}}),
        f"{GET}/parameters/0/in",
        ["'in' must be", "found a mapping"],
    ),
    "parameter media type entry is a string": (
        _doc(parameter={"in": "path", "content": {"application/json": "s"}}),
        f"{GET}/parameters/0/content/application~1json",
        ["must be a mapping", "found a string"],
    ),
    "body media type entry is a string": (
        _doc(body={"content": {"application/json": "s"}}),
        f"{POST}/requestBody/content/application~1json",
        ["must be a mapping", "found a string"],
    ),
    "body media type entry is a list": (
        _doc(body={"content": {"application/json": [1]}}),
        f"{POST}/requestBody/content/application~1json",
        ["must be a mapping", "found a list"],
    ),
    "allOf member properties is a list": (
        _doc(body=_body_schema({"allOf": [{"properties": [1, 2]}]})),
        f"{SCHEMA}/allOf/0/properties",
        ["'properties' must be a mapping", "found a list"],
    ),
    "properties is a string next to allOf": (
        _doc(body=_body_schema({"properties": "x", "allOf": [{"type": "object"}]})),
        f"{SCHEMA}/properties",
        ["'properties' must be a mapping", "found a string"],
    ),
    "allOf member required is a number": (
        _doc(
            body=_body_schema({"allOf": [{"properties": {"a": {"type": "string"}}, "required": 5}]})
        ),
        f"{SCHEMA}/allOf/0/required",
        ["'required' must be a list", "found a number"],
    ),
    "body schema required is a number": (
        _doc(
            body=_body_schema(
                {"type": "object", "properties": {"a": {"type": "string"}}, "required": 5}
            )
        ),
        f"{SCHEMA}/required",
        ["'required' must be a list", "found a number"],
    ),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_malformed_shapes_are_errors_with_paths(shape):
    text, path, words = SHAPES[shape]
    report = import_content(text, actor=None, dry_run=True, **PETS)
    assert not report.ok
    problem = next((p for p in report.errors if p.path == path), None)
    assert problem is not None, report.text()
    for word in words:
        assert word in problem.message, problem.message
    assert problem.line is not None
    assert not Tool.objects.exists()


@pytest.mark.parametrize("shape", list(SHAPES))
def test_api_answers_malformed_shapes_with_400(staff_client, shape):
    text, path, _ = SHAPES[shape]
    response = staff_client.post(
        URL, {"content": text, "dry_run": True, **PETS, "format": "openapi"}, format="json"
    )
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "import_invalid"
    assert path in [e["path"] for e in error["details"]["errors"]]
    assert path in error["message"]


def test_unparseable_base_url_is_an_error():
    report = import_content(_doc(), actor=None, dry_run=True, base_url="http://[::1", namespace="x")
    assert not report.ok
    assert "base_url" in report.text() and "http(s) URL" in report.text()


def test_api_unparseable_base_url_is_a_400(staff_client):
    body = {"content": _doc(), "dry_run": True, "base_url": "http://[::1", "namespace": "x"}
    response = staff_client.post(URL, body, format="json")
    assert response.status_code == 400, response.content
    assert "base_url" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "base_url",
    [f"http://user:{CANARY}@pets.example/v1", f"https://{CANARY}@pets.example"],
)
def test_base_url_with_credentials_is_refused(base_url):
    report = import_content(_doc(), actor=None, base_url=base_url, namespace="pets")
    assert not report.ok
    text = report.text()
    assert "credentials" in text and "secret config" in text
    assert CANARY not in text
    assert not Tool.objects.exists() and not ToolConfig.objects.exists()


def test_api_base_url_with_credentials_is_a_400(staff_client):
    body = {"content": _doc(), "base_url": f"http://user:{CANARY}@pets.example", "namespace": "p"}
    response = staff_client.post(URL, body, format="json")
    assert response.status_code == 400, response.content
    assert "credentials" in response.json()["error"]["message"]
    assert CANARY not in response.content.decode()
    assert not ToolConfig.objects.exists()


@pytest.mark.parametrize("error", [TypeError, AttributeError, ValueError, KeyError])
def test_unforeseen_shapes_become_an_error_naming_the_operation(
    monkeypatch, caplog, staff_client, error
):
    def broken(*args, **kwargs):
        raise error(CANARY)

    monkeypatch.setattr(openapi, "property_to_row", broken)
    text = _doc(parameter={"in": "path", "schema": {"type": "string"}})
    with caplog.at_level(logging.DEBUG):
        report = import_content(text, actor=None, dry_run=True, **PETS)
        response = staff_client.post(URL, {"content": text, "dry_run": True, **PETS}, format="json")
    assert not report.ok
    [problem] = report.errors
    assert problem.path == GET and problem.line is not None
    assert "GET /a/{p}" in problem.message
    assert response.status_code == 400, response.content
    assert "GET /a/{p}" in response.json()["error"]["message"]
    for record in caplog.records:
        if record.levelno >= logging.ERROR:
            assert CANARY not in record.getMessage() and "/a/{p}" not in record.getMessage()
    assert not Tool.objects.exists()
