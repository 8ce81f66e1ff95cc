// Drives one MCP server over stdio with the official TypeScript SDK's client and prints, as one
// JSON object, what a real client sees: the server's name, its tools, and each call's result.
// The SDK validates a result's structuredContent against the tool's outputSchema, so a call that
// returns here (rather than "threw") passed that check too.
// Usage: node client.mjs '<plan as JSON: {"command", "args", "env", "calls": [{"name", "arguments"}]}>'
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const plan = JSON.parse(process.argv[2]);
const transport = new StdioClientTransport({
  command: plan.command,
  args: plan.args,
  env: { ...process.env, ...(plan.env || {}) },
  stderr: "ignore",
});
const client = new Client({ name: "docab-interop", version: "0.0.1" });
const out = { server: null, protocolVersion: null, tools: [], calls: [] };
try {
  await client.connect(transport);
  out.server = client.getServerVersion();
  out.protocolVersion = transport._protocolVersion ?? null;
  out.tools = (await client.listTools()).tools.map((t) => ({
    name: t.name,
    outputSchema: !!t.outputSchema,
    readOnlyHint: t.annotations?.readOnlyHint ?? null,
  }));
  for (const call of plan.calls) {
    try {
      const result = await client.callTool({ name: call.name, arguments: call.arguments });
      out.calls.push({
        name: call.name,
        isError: !!result.isError,
        structured: result.structuredContent ?? null,
        content: result.content.map((c) =>
          c.type === "text" ? { type: "text", text: c.text } : { type: c.type, mimeType: c.mimeType ?? null, bytes: Buffer.from(c.data ?? "", "base64").length }
        ),
      });
    } catch (error) {
      out.calls.push({ name: call.name, threw: String(error?.message ?? error) });
    }
  }
} catch (error) {
  out.failed = String(error?.message ?? error);
} finally {
  await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(out) + "\n");
