// The official TypeScript SDK client (@modelcontextprotocol/sdk 1.x) on a
// team hub's balancer, for TestTeamHubTSClientThroughAKill. Usage:
//
//   MCPHUB_NODE_MODULES=/path/to/node_modules node team_ts_client.mjs URL N
//
// It calls up__slow_progress with n = N and an onprogress callback; after
// the 20th progress notification it prints {"step":"progress20"} (the test
// then SIGKILLs the replica relaying the call, and the SDK resumes its
// stream with Last-Event-ID through the balancer). When the call returns
// it prints {"step":"done","progress":[...],"result":"..."} and exits 0.
// Any failure prints {"error": ...} and exits 1.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = process.env.MCPHUB_NODE_MODULES;
const fail = (e) => {
  console.log(JSON.stringify({ error: String(e && e.stack ? e.stack : e) }));
  process.exit(1);
};
if (!modules) fail('MCPHUB_NODE_MODULES is not set');
const sdk = (file) =>
  import(pathToFileURL(path.join(modules, '@modelcontextprotocol/sdk/dist/esm', file)).href);
const { Client } = await sdk('client/index.js');
const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');

try {
  const [url, n] = process.argv.slice(2);
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    reconnectionOptions: { initialReconnectionDelay: 500, maxReconnectionDelay: 2000, reconnectionDelayGrowFactor: 1.5, maxRetries: 10 },
  });
  const client = new Client({ name: 'team-ts', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  const progress = [];
  const result = await client.callTool(
    { name: 'up__slow_progress', arguments: { n: Number(n), delay_ms: 40, tag: 'ts' } },
    undefined,
    {
      timeout: 60000,
      resetTimeoutOnProgress: true,
      onprogress: (p) => {
        progress.push(p.progress);
        if (progress.length === 20) console.log(JSON.stringify({ step: 'progress20' }));
      },
    }
  );
  const text = (result.content ?? []).map((c) => c.text ?? '').join('');
  console.log(JSON.stringify({ step: 'done', progress, result: text }));
  await client.close();
  process.exit(0);
} catch (e) {
  fail(e);
}
