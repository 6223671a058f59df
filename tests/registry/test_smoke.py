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


@pytest.mark.parametrize(
    ("header", "named"),
    [
        ("Basic YWxpY2U6c2VjcmV0", "The Authorization scheme 'Basic' is not accepted"),
        ("Digest username=alice", "The Authorization scheme 'Digest' is not accepted"),
        ("th_lonesecretvalue", "not in a form the API accepts"),
        ("s3cr3tp4ss", "not in a form the API accepts"),
    ],
)
def test_an_unaccepted_authorization_scheme_is_named(anon_client, header, named):
    response = anon_client.get("/api/v1/tools", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    error = response.json()["error"]
    assert error["code"] == "not_authenticated"
    assert named in error["message"] and "Bearer <token>" in error["message"]
    assert "s3cr3t" not in response.content.decode() and "lonesecret" not in error["message"]
    assert response["WWW-Authenticate"].startswith("Bearer")
