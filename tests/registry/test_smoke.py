import pytest

pytestmark = pytest.mark.django_db


def test_list_tools_requires_auth(anon_client):
    response = anon_client.get("/api/v1/tools")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


def test_staff_creates_tool_and_reads_it_back(staff_client):
    response = staff_client.post(
        "/api/v1/tools",
        {
            "name": "weather",
            "type": "http",
            "parameters": [{"name": "city", "type": "string", "required": True}],
            "configs": [{"config_key": "api_key", "config_value": "s3cr3t", "is_secret": True}],
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["configs"][0]["config_value"] == "********"
    assert body["input_schema"]["required"] == ["city"]
