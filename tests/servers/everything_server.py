"""An MCP server with every fixture the official conformance suite's server scenarios name.

``@modelcontextprotocol/conformance`` (``conformance server --url …``) calls tools,
prompts and resources by fixed names (``test_simple_text``, ``test://static-text``,
``test_prompt_with_arguments`` …) and checks what comes back against the text of each
scenario. This server implements those texts on the ``mcp`` SDK's low-level server, so
the suite can be run against it directly and through ToolHub fronting it
(``tests/executions/mcp_server/test_conformance.py``)::

    python tests/servers/everything_server.py --port 8125 [--token T]

With ``--token`` it answers 401 to a request without ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys

import mcp_types as types
from mcp.server.lowlevel.server import Server

try:  # run as a script, or imported by the tests
    from tests.servers.mcp_server import PIXEL_PNG, require_bearer
except ModuleNotFoundError:  # pragma: no cover - as a script, tests/ is not a package path
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))
    from tests.servers.mcp_server import PIXEL_PNG, require_bearer


def _wav() -> str:
    """A tenth of a second of silence: 8 kHz, 8-bit, mono."""
    frames = b"\x80" * 800
    header = (
        b"RIFF"
        + (36 + len(frames)).to_bytes(4, "little")
        + b"WAVEfmt "
        + (16).to_bytes(4, "little")
        + (1).to_bytes(2, "little")  # PCM
        + (1).to_bytes(2, "little")  # mono
        + (8000).to_bytes(4, "little")
        + (8000).to_bytes(4, "little")
        + (1).to_bytes(2, "little")
        + (8).to_bytes(2, "little")
        + b"data"
        + len(frames).to_bytes(4, "little")
    )
    return base64.b64encode(header + frames).decode()


WAV = _wav()
_EMPTY = {"type": "object", "properties": {}}


def _tool(name: str, description: str, schema: dict | None = None) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema=schema or _EMPTY)


def _text_arg(name: str, description: str) -> dict:
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": description}},
        "required": [name],
    }


TOOLS = [
    _tool("test_simple_text", "Returns a simple text response."),
    _tool("test_image_content", "Returns a 1x1 PNG image."),
    _tool("test_audio_content", "Returns a short WAV clip."),
    _tool("test_embedded_resource", "Returns an embedded text resource."),
    _tool("test_multiple_content_types", "Returns text, an image and a resource."),
    _tool("test_tool_with_logging", "Logs three messages while it runs."),
    _tool("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100."),
    _tool("test_error_handling", "Always fails."),
    _tool("test_sampling", "Asks the client's model.", _text_arg("prompt", "The prompt")),
    _tool("test_elicitation", "Asks the user.", _text_arg("message", "Shown to the user")),
    _tool("test_elicitation_sep1034_defaults", "Asks the user, with defaults."),
    _tool("test_elicitation_sep1330_enums", "Asks the user to choose."),
    _tool(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": False,
        },
    ),
]

DEFAULTS_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {
            "type": "string",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "default": True},
    },
}
ENUMS_SCHEMA = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def _image() -> types.ImageContent:
    return types.ImageContent(type="image", data=PIXEL_PNG, mime_type="image/png")


def _resource(uri: str, mime_type: str, text: str) -> types.EmbeddedResource:
    return types.EmbeddedResource(
        type="resource",
        resource=types.TextResourceContents(uri=uri, mime_type=mime_type, text=text),
    )


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    name, arguments = params.name, params.arguments or {}
    session, related = ctx.session, ctx.request_id
    if name == "test_simple_text":
        content = [_text("This is a simple text response for testing.")]
    elif name == "test_image_content":
        content = [_image()]
    elif name == "test_audio_content":
        content = [types.AudioContent(type="audio", data=WAV, mime_type="audio/wav")]
    elif name == "test_embedded_resource":
        uri, text = "test://embedded-resource", "This is an embedded resource content."
        content = [_resource(uri, "text/plain", text)]
    elif name == "test_multiple_content_types":
        data = json.dumps({"test": "data", "value": 123}, separators=(",", ":"))
        content = [
            _text("Multiple content types test:"),
            _image(),
            _resource("test://mixed-content-resource", "application/json", data),
        ]
    elif name == "test_tool_with_logging":
        for index, line in enumerate(
            ["Tool execution started", "Tool processing data", "Tool execution completed"]
        ):
            if index:
                await asyncio.sleep(0.05)
            await session.send_log_message("info", line, related_request_id=related)
        content = [_text("Logged three messages.")]
    elif name == "test_tool_with_progress":
        meta = params.meta or {}
        token = meta.get("progressToken", meta.get("progress_token"))
        for index, value in enumerate([0, 50, 100]):
            if index:
                await asyncio.sleep(0.05)
            if token is not None:
                await session.send_progress_notification(token, value, 100, None, related)
        content = [_text("Progress reported.")]
    elif name == "test_error_handling":
        text = "This tool intentionally returns an error for testing"
        return types.CallToolResult(content=[_text(text)], is_error=True)
    elif name == "test_sampling":
        asked = types.SamplingMessage(role="user", content=_text(str(arguments.get("prompt"))))
        answer = await session.create_message([asked], max_tokens=100, related_request_id=related)
        said = answer.content.text if isinstance(answer.content, types.TextContent) else ""
        content = [_text(f"LLM response: {said}")]
    elif name == "test_elicitation":
        schema = {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        }
        answer = await session.elicit_form(str(arguments.get("message")), schema, related)
        content = [_text(f"User response: action={answer.action}, content={answer.content}")]
    elif name in ("test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums"):
        schema = DEFAULTS_SCHEMA if name.endswith("defaults") else ENUMS_SCHEMA
        answer = await session.elicit_form("Please review these fields.", schema, related)
        content = [
            _text(f"Elicitation completed: action={answer.action}, content={answer.content}")
        ]
    elif name == "json_schema_2020_12_tool":
        content = [_text(json.dumps(arguments))]
    else:
        return types.CallToolResult(content=[_text(f"Unknown tool: {name}")], is_error=True)
    return types.CallToolResult(content=content)


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


RESOURCES = [
    types.Resource(
        uri="test://static-text",
        name="static-text",
        description="A static text resource.",
        mime_type="text/plain",
    ),
    types.Resource(
        uri="test://static-binary",
        name="static-binary",
        description="A static binary resource (a PNG).",
        mime_type="image/png",
    ),
    types.Resource(
        uri="test://watched-resource",
        name="watched-resource",
        description="A resource a client may subscribe to.",
        mime_type="text/plain",
    ),
]
TEMPLATE = types.ResourceTemplate(
    uri_template="test://template/{id}/data",
    name="template-data",
    description="Data for an id.",
    mime_type="application/json",
)


async def list_resources(ctx, params) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=RESOURCES)


async def list_templates(ctx, params) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=[TEMPLATE])


async def read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    uri = str(params.uri)
    if uri == "test://static-text":
        text = "This is the content of the static text resource."
        found = types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)
    elif uri == "test://static-binary":
        found = types.BlobResourceContents(uri=uri, mime_type="image/png", blob=PIXEL_PNG)
    elif uri == "test://watched-resource":
        found = types.TextResourceContents(uri=uri, mime_type="text/plain", text="Watched.")
    elif uri.startswith("test://template/") and uri.endswith("/data"):
        ident = uri.removeprefix("test://template/").removesuffix("/data")
        data = {"id": ident, "templateTest": True, "data": f"Data for ID: {ident}"}
        found = types.TextResourceContents(
            uri=uri, mime_type="application/json", text=json.dumps(data, separators=(",", ":"))
        )
    else:
        from mcp.shared.exceptions import MCPError

        raise MCPError(-32002, f"Resource not found: {uri}")
    return types.ReadResourceResult(contents=[found])


_subscribed: set[str] = set()


async def subscribe(ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
    _subscribed.add(str(params.uri))
    return types.EmptyResult()


async def unsubscribe(ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    _subscribed.discard(str(params.uri))
    return types.EmptyResult()


def _argument(name: str, description: str) -> types.PromptArgument:
    return types.PromptArgument(name=name, description=description, required=True)


PROMPTS = [
    types.Prompt(name="test_simple_prompt", description="A prompt without arguments."),
    types.Prompt(
        name="test_prompt_with_arguments",
        description="A prompt with two arguments.",
        arguments=[_argument("arg1", "First test argument"), _argument("arg2", "Second one")],
    ),
    types.Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt that embeds a resource.",
        arguments=[_argument("resourceUri", "URI of the resource to embed")],
    ),
    types.Prompt(name="test_prompt_with_image", description="A prompt with an image."),
]


def _said(content) -> types.PromptMessage:
    return types.PromptMessage(role="user", content=content)


async def list_prompts(ctx, params) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=PROMPTS)


async def get_prompt(ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    name, arguments = params.name, params.arguments or {}
    if name == "test_simple_prompt":
        messages = [_said(_text("This is a simple prompt for testing."))]
    elif name == "test_prompt_with_arguments":
        line = (
            f"Prompt with arguments: arg1='{arguments.get('arg1')}', arg2='{arguments.get('arg2')}'"
        )
        messages = [_said(_text(line))]
    elif name == "test_prompt_with_embedded_resource":
        uri = arguments.get("resourceUri") or "test://example-resource"
        messages = [
            _said(_resource(uri, "text/plain", "Embedded resource content for testing.")),
            _said(_text("Please process the embedded resource above.")),
        ]
    elif name == "test_prompt_with_image":
        messages = [_said(_image()), _said(_text("Please analyze the image above."))]
    else:
        from mcp.shared.exceptions import MCPError

        raise MCPError(types.INVALID_PARAMS, f"Unknown prompt: {name}")
    return types.GetPromptResult(messages=messages)


WORDS = ["paris", "park", "party", "pasta", "testValue1", "testValue2"]


async def complete(ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
    typed = params.argument.value or ""
    values = [word for word in WORDS if word.startswith(typed)]
    return types.CompleteResult(
        completion=types.Completion(values=values, total=len(values), has_more=False)
    )


async def set_level(ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


def build_server() -> Server:
    server = Server(
        "toolhub-everything",
        version="1",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=complete,
        on_set_logging_level=set_level,
    )
    server.middleware = []  # no OpenTelemetry exporter here
    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--token", default=None)
    args = parser.parse_args(argv)

    import uvicorn

    app = build_server().streamable_http_app(host=args.host)
    if args.token:
        app = require_bearer(app, args.token)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main(sys.argv[1:])
