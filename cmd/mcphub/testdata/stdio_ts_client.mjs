// The official TypeScript SDK client talking to `mcphub stdio` over stdio,
// for TestStdioFaceTSClient. Usage:
//
//   MCPHUB_NODE_MODULES=/path/to/node_modules node stdio_ts_client.mjs MCPHUB [ARGS...]
//
// It starts `MCPHUB stdio ARGS...` with this process's environment (so the
// hub's registry and data directory), lists the tools, calls
// everything__test_tool_with_progress with an onprogress callback and
// everything__test_sampling (answering the sampling request itself), and
// prints one JSON line with what it saw. It then waits for one line on its
// stdin (the test restarts the hub meanwhile), calls test_sampling again,
// prints a second JSON line, waits for another line (the test looks at the
// hub's sessions meanwhile), closes the client and exits 0. Any failure
// prints {"error": ...} and exits 1.
import path from 'node:path';
import readline from 'node:readline';
import { pathToFileURL } from 'node:url';

const modules = process.env.MCPHUB_NODE_MODULES;
if (!modules) {
  console.log(JSON.stringify({ error: 'MCPHUB_NODE_MODULES is not set' }));
  process.exit(1);
}
const sdk = (file) =>
  import(pathToFileURL(path.join(modules, '@modelcontextprotocol/sdk/dist/esm', file)).href);
const { Client } = await sdk('client/index.js');
const { StdioClientTransport } = await sdk('client/stdio.js');
const { CreateMessageRequestSchema } = await sdk('types.js');

const [command, ...args] = process.argv.slice(2);
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const text = (result) => (result.content ?? []).map((c) => c.text ?? '').join('');

const transport = new StdioClientTransport({
  command,
  args: ['stdio', ...args],
  env: process.env,
  stderr: 'inherit',
});
const client = new Client({ name: 'ts-interop', version: '1.0.0' }, { capabilities: { sampling: {} } });
let samplingRequests = 0;
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  samplingRequests++;
  const prompt = request.params.messages?.[0]?.content?.text ?? '';
  return { role: 'assistant', model: 'ts-interop', content: { type: 'text', text: `ts says ${prompt}` } };
});

try {
  await client.connect(transport);
  const tools = (await client.listTools()).tools.map((t) => t.name);
  const progress = [];
  const withProgress = await client.callTool(
    { name: 'everything__test_tool_with_progress', arguments: {} },
    undefined,
    { onprogress: (p) => progress.push(p.progress) },
  );
  const sampled = await client.callTool({ name: 'everything__test_sampling', arguments: { prompt: 'before' } });
  console.log(JSON.stringify({
    step: 'before',
    server: client.getServerVersion()?.name,
    tools,
    progress,
    progressError: withProgress.isError ?? false,
    sampling: text(sampled),
    samplingRequests,
  }));

  await lines.next(); // the test has restarted the hub

  const after = await client.callTool({ name: 'everything__test_sampling', arguments: { prompt: 'after' } });
  const toolsAfter = (await client.listTools()).tools.length;
  console.log(JSON.stringify({ step: 'after', sampling: text(after), samplingRequests, tools: toolsAfter }));
  await lines.next(); // the test has looked at the hub's sessions
  await client.close();
  process.exit(0);
} catch (err) {
  console.log(JSON.stringify({ error: String(err?.stack ?? err) }));
  await client.close().catch(() => {});
  process.exit(1);
}
