// The official TypeScript SDK's experimental tasks client against ToolHub's /mcp.
// Usage: node tasks_client.mjs <url> <token> <tool> <arguments JSON> [cancel]
// Prints one JSON line per message of the call's stream (taskCreated, taskStatus,
// result, error), then a last line with what tasks/get says of the task. With
// "cancel", the task is cancelled (tasks/cancel) once created, and the stream read on.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, tool, args, mode] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "toolhub-tasks-test", version: "1.0.0" });
await client.connect(transport);
const out = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
out({ type: "capabilities", tasks: client.getServerCapabilities()?.tasks ?? null });
const listed = await client.listTools();
out({ type: "listed", execution: listed.tools.find((t) => t.name === tool)?.execution ?? null });

let taskId;
// Asked for explicitly: the client learns which tools run as tasks from its last
// tools/list page only, and ToolHub's list may have several.
const stream = client.experimental.tasks.callToolStream(
  { name: tool, arguments: JSON.parse(args) },
  undefined,
  { task: {} },
);
for await (const message of stream) {
  if (message.type === "error") out({ type: "error", message: message.error.message });
  else out(message);
  if (message.type === "taskCreated") {
    taskId = message.task.taskId;
    if (mode === "cancel") out({ type: "cancelled", task: await client.experimental.tasks.cancelTask(taskId) });
  }
}
if (taskId) out({ type: "final", task: await client.experimental.tasks.getTask(taskId) });
await client.close();
