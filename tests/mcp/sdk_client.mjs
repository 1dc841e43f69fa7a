// A real MCP client (the official TypeScript SDK) driving `goscope mcp`,
// for tests/runtime/test_mcp.cpp. It runs one scenario and prints one JSON
// object of what it saw; the C++ test holds the fixtures and asserts.
//
//   node sdk_client.mjs SCENARIO '{"goscope": PATH, "args": [...], ...}'
//   node sdk_client.mjs SCENARIO @CONFIG.json
//
// Scenarios:
//   session    initialize, list tools, then each call in `calls` in turn
//              ({name, arguments}); each result or error recorded
//   cancel     starts `call`, aborts it after `abortMs`, then calls `after`
//              (the server must still answer)
//   disconnect starts `call`, closes the connection after `closeMs`
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [scenario, configText] = process.argv.slice(2);
const config = JSON.parse(configText.startsWith("@") ? readFileSync(configText.slice(1), "utf8") : configText);
const out = { scenario };

function summary(result) {
  return {
    isError: result.isError === true,
    text: (result.content || []).filter((c) => c.type === "text").map((c) => c.text).join(""),
    structured: result.structuredContent ?? null,
  };
}

async function call(client, c, extra = {}) {
  const progress = [];
  try {
    const result = await client.callTool({ name: c.name, arguments: c.arguments }, undefined, {
      timeout: 180000,
      resetTimeoutOnProgress: true,
      onprogress: (p) => progress.push(p),
      ...extra,
    });
    return { ...summary(result), progress };
  } catch (e) {
    return { thrown: String(e && e.message ? e.message : e), code: e && e.code, progress };
  }
}

const transport = new StdioClientTransport({ command: config.goscope, args: config.args || ["mcp"], stderr: "pipe" });
let stderr = "";
transport.stderr?.on("data", (d) => (stderr += d.toString()));
const client = new Client({ name: "goscope-test", version: "1.0.0" });
await client.connect(transport);
out.serverPid = transport.pid;
out.server = client.getServerVersion();
out.instructions = client.getInstructions() ?? null;
out.tools = (await client.listTools()).tools.map((t) => t.name);

if (scenario === "session") {
  out.calls = [];
  for (const c of config.calls) out.calls.push(await call(client, c));
} else if (scenario === "cancel") {
  const ac = new AbortController();
  const started = Date.now();
  const pending = call(client, config.call, { signal: ac.signal });
  setTimeout(() => ac.abort("the test cancels it"), config.abortMs);
  out.cancelled = await pending;
  out.cancelledAfterMs = Date.now() - started;
  out.after = await call(client, config.after);
} else if (scenario === "disconnect") {
  const pending = call(client, config.call);
  await new Promise((r) => setTimeout(r, config.closeMs));
  await client.close();
  out.closed = await pending;
}

await client.close();
out.stderr = stderr;
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(0);
