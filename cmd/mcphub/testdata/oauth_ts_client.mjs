// The official TypeScript SDK client (@modelcontextprotocol/sdk 1.x) signing
// in to an OAuth-protected MCP endpoint with its OAuth client provider, the
// browser's part played by plain HTTP requests. Usage:
//
//   MCPHUB_NODE_MODULES=/path/to/node_modules \
//     node oauth_ts_client.mjs URL USERNAME PASSWORD [TOOL[=ARGS_JSON]]...
//
// Environment (all optional):
//   OAUTH_CLIENT_ID      the client id the provider hands the SDK as its
//                        client information (default "native", the public
//                        client of the zitadel/oidc example provider); empty:
//                        none, so the SDK registers one dynamically
//   OAUTH_CLIENT_SECRET  that client's secret (default: none, a public client)
//   OAUTH_REDIRECT_URL   the redirect URI (default http://127.0.0.1:8976/callback;
//                        nothing listens there: the code is read from the
//                        redirect that names it)
//   OAUTH_SCOPE          the client metadata's scope, which the SDK asks for
//                        only when neither the 401 nor the protected resource
//                        metadata names scopes (default: none)
//
// It connects to URL with a StreamableHTTPClientTransport whose authProvider
// keeps everything in memory. When the SDK sends it to the authorization
// endpoint, it GETs that URL, follows redirects to the login form, POSTs
// USERNAME and PASSWORD in it, and follows redirects until one names the
// redirect URI with ?code=; it then calls transport.finishAuth(code) and
// connects again with a new transport (the provider holds the tokens). It
// prints one JSON line per step:
//
//   {"step":"signin","clientId":...,"resource":...,"scope":...,"authorizeHost":...}
//       what the SDK asked the authorization server for (no secrets)
//   {"step":"tools","names":[...]}
//   {"step":"call","tool":T,"isError":false,"text":"..."}
//       one per TOOL, in order: a result (isError as the tool said), or
//   {"step":"call","tool":T,"code":N,"message":"..."}
//       a refusal: a JSON-RPC error (its code), or an HTTP one (the SDK's
//       code: the HTTP status)
//
// then closes the client and exits 0. Any other failure prints
// {"error": ...} and exits 1.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';

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
const { UnauthorizedError } = await sdk('client/auth.js');

const [url, username, password, ...calls] = process.argv.slice(2);
if (!url || username === undefined || password === undefined) {
  fail('usage: oauth_ts_client.mjs URL USERNAME PASSWORD [TOOL[=ARGS_JSON]]...');
}
const clientId = process.env.OAUTH_CLIENT_ID ?? 'native';
const clientSecret = process.env.OAUTH_CLIENT_SECRET || undefined;
const redirectUrl = process.env.OAUTH_REDIRECT_URL || 'http://127.0.0.1:8976/callback';
const say = (o) => console.log(JSON.stringify(o));

// An OAuthClientProvider that keeps everything in memory.
class MemoryProvider {
  constructor() {
    this._client = clientId
      ? { client_id: clientId, ...(clientSecret ? { client_secret: clientSecret } : {}) }
      : undefined;
    this._tokens = undefined;
    this._verifier = undefined;
    this._state = undefined;
    this._discovery = undefined;
    this.authorizationUrl = undefined;
  }
  get redirectUrl() {
    return redirectUrl;
  }
  get clientMetadata() {
    return {
      client_name: 'mcphub oauth test',
      redirect_uris: [redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: clientSecret ? 'client_secret_basic' : 'none',
      ...(process.env.OAUTH_SCOPE ? { scope: process.env.OAUTH_SCOPE } : {}),
    };
  }
  state() {
    this._state = randomBytes(16).toString('hex');
    return this._state;
  }
  clientInformation() {
    return this._client;
  }
  saveClientInformation(info) {
    this._client = info;
  }
  tokens() {
    return this._tokens;
  }
  saveTokens(tokens) {
    this._tokens = tokens;
  }
  redirectToAuthorization(authorizationUrl) {
    this.authorizationUrl = authorizationUrl;
  }
  saveCodeVerifier(verifier) {
    this._verifier = verifier;
  }
  codeVerifier() {
    if (!this._verifier) throw new Error('no code verifier saved');
    return this._verifier;
  }
  saveDiscoveryState(state) {
    this._discovery = state;
  }
  discoveryState() {
    return this._discovery;
  }
  invalidateCredentials(scope) {
    if (scope === 'all' || scope === 'tokens') this._tokens = undefined;
    if (scope === 'all' || scope === 'verifier') this._verifier = undefined;
    if (scope === 'all' || scope === 'client') this._client = clientId ? { client_id: clientId } : undefined;
    if (scope === 'all' || scope === 'discovery') this._discovery = undefined;
  }
}

const unescapeHTML = (s) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&#x27;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
const attr = (tag, name) => {
  const m = tag.match(new RegExp(`\\s${name}\\s*=\\s*("([^"]*)"|'([^']*)'|([^\\s>]+))`, 'i'));
  return m ? unescapeHTML(m[2] ?? m[3] ?? m[4] ?? '') : undefined;
};

// loginForm finds the form with a password field in an HTML page and returns
// where to send it and its fields, the user's credentials filled in.
function loginForm(html, pageUrl) {
  for (const m of html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)) {
    const inputs = [...m[2].matchAll(/<input\b[^>]*>/gi)].map((i) => i[0]);
    if (!inputs.some((i) => (attr(i, 'type') ?? '').toLowerCase() === 'password')) continue;
    const fields = new URLSearchParams();
    let userSet = false;
    for (const i of inputs) {
      const name = attr(i, 'name');
      if (!name) continue;
      const type = (attr(i, 'type') ?? 'text').toLowerCase();
      if (type === 'password') fields.set(name, password);
      else if (!userSet && ['text', 'email'].includes(type) && !attr(i, 'value')) {
        fields.set(name, username);
        userSet = true;
      } else if (!['submit', 'button', 'checkbox', 'radio'].includes(type)) fields.set(name, attr(i, 'value') ?? '');
    }
    const action = new URL(attr(m[1], 'action') || pageUrl, pageUrl);
    return { action, method: (attr(m[1], 'method') ?? 'GET').toUpperCase(), fields };
  }
  return undefined;
}

// browse plays the browser from the authorization URL to the redirect to
// redirectUrl and returns the code it carries.
async function browse(authorizationUrl) {
  const target = new URL(redirectUrl);
  const cookies = new Map(); // host -> Map(name -> value)
  let req = { url: new URL(authorizationUrl), method: 'GET', body: undefined };
  let posted = false;
  for (let hop = 0; hop < 30; hop++) {
    const jar = cookies.get(req.url.host);
    const headers = { accept: 'text/html,application/xhtml+xml,*/*' };
    if (jar?.size) headers.cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    if (req.body) headers['content-type'] = 'application/x-www-form-urlencoded';
    const res = await fetch(req.url, { method: req.method, body: req.body, headers, redirect: 'manual' });
    for (const c of res.headers.getSetCookie?.() ?? []) {
      const [pair] = c.split(';');
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      if (!cookies.has(req.url.host)) cookies.set(req.url.host, new Map());
      cookies.get(req.url.host).set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      await res.body?.cancel();
      const next = new URL(location, req.url);
      if (next.origin === target.origin && next.pathname === target.pathname) {
        const error = next.searchParams.get('error');
        if (error) {
          throw new Error(`the authorization server refused: ${error}: ${next.searchParams.get('error_description') ?? ''}`);
        }
        const code = next.searchParams.get('code');
        if (!code) throw new Error(`the redirect to ${target.href} carries no code`);
        return { code, state: next.searchParams.get('state') };
      }
      const keep = res.status === 307 || res.status === 308;
      req = { url: next, method: keep ? req.method : 'GET', body: keep ? req.body : undefined };
      continue;
    }
    const html = await res.text();
    const form = res.ok ? loginForm(html, req.url) : undefined;
    if (!form) {
      throw new Error(`no login form and no redirect at ${req.url.origin}${req.url.pathname} (HTTP ${res.status}): ${html.slice(0, 300)}`);
    }
    if (posted) {
      const said = html.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim();
      throw new Error(`the login form came back after signing in as ${username}: ${said.slice(0, 300)}`);
    }
    posted = true;
    req =
      form.method === 'POST'
        ? { url: form.action, method: 'POST', body: form.fields.toString() }
        : { url: new URL(`${form.action.origin}${form.action.pathname}?${form.fields}`), method: 'GET', body: undefined };
  }
  throw new Error('more than 30 redirects on the way to the redirect URI');
}

const provider = new MemoryProvider();
const connect = async () => {
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  const client = new Client({ name: 'oauth-ts', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  return client;
};

try {
  let client;
  const first = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  try {
    client = new Client({ name: 'oauth-ts', version: '1.0.0' }, { capabilities: {} });
    await client.connect(first);
  } catch (e) {
    if (!(e instanceof UnauthorizedError) || !provider.authorizationUrl) throw e;
    client = undefined;
  }
  if (!client) {
    const authz = provider.authorizationUrl;
    const { code, state } = await browse(authz);
    if (provider._state !== undefined && state !== provider._state) {
      throw new Error(`the redirect's state ${state} is not the one sent`);
    }
    await first.finishAuth(code);
    await first.close().catch(() => {});
    say({
      step: 'signin',
      clientId: provider.clientInformation()?.client_id,
      resource: authz.searchParams.get('resource'),
      scope: authz.searchParams.get('scope'),
      authorizeHost: authz.host,
    });
    client = await connect();
  }
  const names = (await client.listTools()).tools.map((t) => t.name);
  say({ step: 'tools', names });
  for (const spec of calls) {
    const eq = spec.indexOf('=');
    const tool = eq < 0 ? spec : spec.slice(0, eq);
    const args = eq < 0 ? {} : JSON.parse(spec.slice(eq + 1));
    try {
      const result = await client.callTool({ name: tool, arguments: args });
      const text = (result.content ?? []).map((c) => c.text ?? '').join('');
      say({ step: 'call', tool, isError: result.isError ?? false, text });
    } catch (e) {
      if (typeof e?.code !== 'number') throw e;
      say({ step: 'call', tool, code: e.code, message: String(e.message ?? e) });
    }
  }
  await client.close();
  process.exit(0);
} catch (e) {
  fail(e);
}
