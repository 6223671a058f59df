// The official MCP TypeScript SDK signing in to a ToolHub MCP endpoint with OAuth, as a stock
// client does: discovery from the 401, its client ID metadata document (or dynamic
// registration when none is given), PKCE, the person's consent, the token; then a list and a
// call. The browser part is the test's: this prints the authorization URL and reads the code
// the redirect carried from stdin.
//
//   node mcp_oauth_client.mjs <mcp url> <redirect url> <metadata document url | -> <tool> <args json>
//
// Prints one JSON object per line: {"event": "authorize", "url"}, {"event": "client", ...},
// {"event": "tokens", ...} and finally {"event": "done", "tools", "result"} (or "error").
import readline from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const [serverUrl, redirectUrl, documentUrl, tool, argsJson] = process.argv.slice(2);
const emit = (event) => process.stdout.write(JSON.stringify(event) + "\n");
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

class Provider {
  constructor() {
    this.information = undefined;
    this.saved = undefined;
    this.verifier = undefined;
    if (documentUrl !== "-") this.clientMetadataUrl = documentUrl;
  }
  get redirectUrl() {
    return redirectUrl;
  }
  get clientMetadata() {
    return {
      client_name: "TypeScript SDK client",
      redirect_uris: [redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return this.information;
  }
  saveClientInformation(information) {
    this.information = information;
    emit({ event: "client", client_id: information.client_id });
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens) {
    this.saved = tokens;
    emit({ event: "tokens", refresh: Boolean(tokens.refresh_token), scope: tokens.scope ?? "" });
  }
  redirectToAuthorization(url) {
    emit({ event: "authorize", url: url.toString() });
  }
  saveCodeVerifier(verifier) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

async function main() {
  const provider = new Provider();
  const client = new Client({ name: "toolhub-typescript-test", version: "1.0.0" });
  const transport = () => new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider: provider });
  let first = transport();
  try {
    await client.connect(first);
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
    const { value } = await lines.next();
    await first.finishAuth(value.trim());
    await client.connect(transport());
  }
  const listed = await client.listTools();
  const result = await client.callTool({ name: tool, arguments: JSON.parse(argsJson) });
  emit({ event: "done", tools: listed.tools.map((t) => t.name), result });
  await client.close();
}

main().then(
  () => process.exit(0),
  (error) => {
    emit({ event: "error", message: String(error && error.stack ? error.stack : error) });
    process.exit(1);
  },
);
