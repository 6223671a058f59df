"""One call of each mode, checked: direct, governed (REST), MCP tools/call, and the floors."""

from __future__ import annotations

import json

import httpx

MCP_INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "1"},
}


def mcp_message(rpc_id: int, method: str, params: dict) -> dict:
    return {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}


def _failed(response: httpx.Response) -> tuple[bool, str, str]:
    return False, "", f"HTTP {response.status_code}: {response.text[:200]}"


class Calls:
    """The clients and calls of one run, against ToolHub at ``base`` and the upstream."""

    def __init__(self, base: str, upstream_url: str, seed: dict) -> None:
        self.base = base
        self.upstream_url = upstream_url
        self.tool_id = seed["tool_id"]
        self.tool_name = seed["tool_name"]
        self.headers = {"Authorization": f"Bearer {seed['token']}"}
        # --oauth: an OAuth access token acting for a person (bench_django.py oauth_token).
        self.oauth_headers = (
            {"Authorization": f"Bearer {seed['oauth_token']}"} if seed.get("oauth_token") else None
        )
        self.read_path: list[str] = []  # one finished execution's URL, set after the warm-up

    # clients -------------------------------------------------------------------------------
    def governed_client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base, headers=self.headers, timeout=60, trust_env=False)

    def direct_client(self) -> httpx.Client:
        return httpx.Client(base_url=self.upstream_url, timeout=60, trust_env=False)

    def mcp_client(self) -> httpx.Client:
        headers = {**self.headers, "Accept": "application/json, text/event-stream"}
        return httpx.Client(base_url=self.base, headers=headers, timeout=60, trust_env=False)

    def mcp_oauth_client(self) -> httpx.Client:
        headers = {**self.oauth_headers, "Accept": "application/json, text/event-stream"}
        return httpx.Client(base_url=self.base, headers=headers, timeout=60, trust_env=False)

    def modes(self, mcp: bool, floor: bool) -> list[tuple[str, object, object]]:
        """(kind, client factory, call) of each mode measured, in order."""
        modes = [
            ("direct", self.direct_client, self.direct),
            ("governed", self.governed_client, self.governed),
        ]
        if mcp:
            modes += [("mcp", self.mcp_client, self.mcp)]
        if mcp and self.oauth_headers:
            modes += [("mcp_oauth", self.mcp_oauth_client, self.mcp)]
        if floor:
            modes += [
                ("noop", self.governed_client, self.noop),
                ("read", self.governed_client, self.read),
            ]
        return modes

    # calls ---------------------------------------------------------------------------------
    def governed(self, client: httpx.Client, x: int) -> tuple[bool, str, str]:
        response = client.post(
            "/api/v1/executions",
            json={"tool_id": self.tool_id, "input_data": {"x": x}, "wait": True},
        )
        try:
            body = response.json()
        except ValueError:
            return _failed(response)
        if (
            response.status_code == 200
            and body.get("status") == "succeeded"
            and (body.get("output_data") or {}).get("data", {}).get("x") == x
        ):
            return True, body["id"], ""
        return False, "", f"HTTP {response.status_code}: {json.dumps(body)[:200]}"

    @staticmethod
    def mcp_session(client: httpx.Client) -> None:
        """A 2025-11-25 client: initialize once, then its session id on each call."""
        opened = client.post("/mcp", json=mcp_message(0, "initialize", MCP_INITIALIZE))
        client.headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
        client.headers["MCP-Protocol-Version"] = MCP_INITIALIZE["protocolVersion"]

    def mcp(self, client: httpx.Client, x: int) -> tuple[bool, str, str]:
        if "Mcp-Session-Id" not in client.headers:  # the thread's first, untimed call
            self.mcp_session(client)
        params = {"name": self.tool_name, "arguments": {"x": x}}
        response = client.post("/mcp", json=mcp_message(x, "tools/call", params))
        answers = [
            json.loads(line[5:])
            for line in response.text.splitlines()
            if line.startswith("data:") and line[5:].strip()
        ]
        result = (answers[-1] if answers else {}).get("result") or {}
        data = (result.get("structuredContent") or {}).get("data") or {}
        if response.status_code == 200 and not result.get("isError") and data.get("x") == x:
            return True, result["_meta"]["io.toolhub/execution"]["id"], ""
        return _failed(response)

    def noop(self, client: httpx.Client, x: int) -> tuple[bool, str, str]:
        response = client.get("/healthz")
        if response.status_code == 200 and response.json().get("status") == "ok":
            return True, "", ""
        return _failed(response)

    def read(self, client: httpx.Client, x: int) -> tuple[bool, str, str]:
        response = client.get(self.read_path[0])
        if response.status_code == 200 and response.json().get("status") == "succeeded":
            return True, "", ""
        return _failed(response)

    def direct(self, client: httpx.Client, x: int) -> tuple[bool, str, str]:
        response = client.get("/ping", params={"x": x})
        if response.status_code == 200 and response.json().get("x") == x:
            return True, "", ""
        return _failed(response)
