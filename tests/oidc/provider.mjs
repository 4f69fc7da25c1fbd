// An OpenID Connect provider for the authentication tests (tests/tests/team_auth.rs): npm's
// oidc-provider, a certified OpenID Connect library, as the authorization server that issues
// the JWT access tokens toolgate checks. Installed by scripts/npm.sh into .tools/node-oidc; run
// with the Node 22 of .tools/node:
//
//   node tests/oidc/provider.mjs .tools/node-oidc/node_modules
//
// Listens on 127.0.0.1 (a port of its own choosing) and prints one line, `issuer <URL>`, when
// it is ready. What it does beyond the library's defaults:
// - dynamic client registration (RFC 7591), so an MCP client registers itself;
// - resource indicators (RFC 8707): a token asked for a resource is a JWT (RS256) whose aud is
//   that resource, with scope `mcp`;
// - the library's development login pages: any login name is accepted as the account, and an
//   account's groups come from GROUPS below (claim `groups` of its access tokens).
// Stops on SIGTERM or when stdin closes.

import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = process.argv[2];
if (!modules) {
  console.error('usage: node provider.mjs <node_modules folder holding oidc-provider>');
  process.exit(2);
}
const { default: Provider } = await import(
  pathToFileURL(path.join(modules, 'oidc-provider', 'lib', 'index.js')).href
);

// The groups of the accounts the tests log in as.
const GROUPS = { alice: ['dev'], bob: ['ops'] };

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [],
  cookies: { keys: ['toolgate-test-cookie-key'] },
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (_ctx, _client, oneOf) => oneOf,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resourceIndicator) => ({
        scope: 'mcp',
        audience: resourceIndicator,
        accessTokenTTL: 300,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
  findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
  extraTokenClaims: (_ctx, token) => ({ groups: GROUPS[token.accountId] ?? [] }),
  scopes: ['openid', 'offline_access', 'mcp'],
});
provider.on('server_error', (_ctx, err) => console.error('oidc-provider server_error:', err));

server.on('request', provider.callback());
console.log(`issuer ${issuer}`);

const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.stdin.on('end', stop);
process.stdin.resume();
