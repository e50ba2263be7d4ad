// The TypeScript SDK's v2 client (@modelcontextprotocol/client), pinned to
// protocol 2026-07-28, against a hub's /mcp or through `mcphub stdio`, for
// TestErasTSClient and TestErasTSClientStdio. Usage:
//
//   MCPHUB_NODE_MODULES=/path/to/node_modules node eras_ts_client.mjs URL
//   MCPHUB_NODE_MODULES=... node eras_ts_client.mjs --stdio MCPHUB stdio
//
// It lists the tools, then for each upstream prefix (st, hs) calls
// PREFIX__test_tool_with_progress with an onprogress callback and
// PREFIX__test_input_required_result_elicitation (its elicitation handler
// answers), then st__test_elicitation, and prints one JSON line with what
// it saw. Any failure prints {"error": ...} and exits 1.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = process.env.MCPHUB_NODE_MODULES;
const fail = (e) => {
  console.log(JSON.stringify({ error: String(e && e.stack ? e.stack : e) }));
  process.exit(1);
};
if (!modules) fail('MCPHUB_NODE_MODULES is not set');
const { Client, StreamableHTTPClientTransport } = await import(
  pathToFileURL(path.join(modules, '@modelcontextprotocol/client/dist/index.mjs')).href
);

try {
  const client = new Client(
    { name: 'eras-ts-v2', version: '0' },
    { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } } }
  );
  let elicited = 0;
  client.setRequestHandler('elicitation/create', async () => {
    elicited++;
    return { action: 'accept', content: { name: 'Ada', username: 'ada' } };
  });
  let transport;
  if (process.argv[2] === '--stdio') {
    const { StdioClientTransport } = await import(
      pathToFileURL(path.join(modules, '@modelcontextprotocol/client/dist/stdio.mjs')).href
    );
    transport = new StdioClientTransport({
      command: process.argv[3], args: process.argv.slice(4), env: process.env, stderr: 'inherit',
    });
  } else {
    transport = new StreamableHTTPClientTransport(new URL(process.argv[2]));
  }
  await client.connect(transport);
  const report = { era: client.getNegotiatedProtocolVersion?.() ?? null, tools: [], progress: {}, answers: {} };
  report.tools = (await client.listTools()).tools.map((t) => t.name);
  const text = (r) => (r.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('');
  for (const p of ['st', 'hs']) {
    let n = 0;
    await client.callTool({ name: `${p}__test_tool_with_progress`, arguments: {} }, { onprogress: () => n++ });
    report.progress[p] = n;
    report.answers[p] = text(await client.callTool({ name: `${p}__test_input_required_result_elicitation`, arguments: {} }));
  }
  report.answers.session = text(await client.callTool({ name: 'st__test_elicitation', arguments: { message: 'who?' } }));
  report.elicited = elicited;
  await client.close();
  console.log(JSON.stringify(report));
  process.exit(0);
} catch (e) {
  fail(e);
}
