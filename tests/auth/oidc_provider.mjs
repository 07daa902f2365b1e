// A real OpenID provider for the tests: the certified `oidc-provider` package (npm), which
// `./run test` installs into build/npm. Started by tests/auth/oidc.py:
//   node oidc_provider.mjs MODULE PORT KEYS_FILE
// MODULE is the package's entry file, PORT the port to listen on (127.0.0.1), KEYS_FILE a
// JSON Web Key Set of private signing keys. Access tokens are JWTs for the resource the
// client names (RFC 8707), with the scopes the test granted the client (POST /test/grant)
// and the client's actor (or the signed-in user's login) in `preferred_username`. The web
// page's client `sediment-web` signs users in with the authorization code flow + PKCE
// through oidc-provider's development login and consent pages (any login name works; its
// redirect URI is on loopback, so any port matches: RFC 8252). Prints "ready <issuer>".
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';

const [moduleFile, port, keysFile] = process.argv.slice(2);
const { default: Provider } = await import(pathToFileURL(moduleFile).href);
const issuer = `http://127.0.0.1:${port}`;
const ALL = 'sediment:reader sediment:writer sediment:reviewer sediment:admin';

// What each client may be granted, changed by the tests (the "role change in the provider").
const grants = {
  agent: 'sediment:reader sediment:writer',
  reader: 'sediment:reader',
  'sediment-web': 'sediment:reader sediment:reviewer',
};
const actors = { agent: 'agent-bot', reader: 'rita-bot' };

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'agent', client_secret: 'agent-secret', grant_types: ['client_credentials'],
      redirect_uris: [], response_types: [], scope: ALL,
    },
    {
      client_id: 'reader', client_secret: 'reader-secret', grant_types: ['client_credentials'],
      redirect_uris: [], response_types: [], scope: ALL,
    },
    {
      client_id: 'sediment-web', application_type: 'native', token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code'], response_types: ['code'],
      redirect_uris: ['http://127.0.0.1/ui/oidc/callback'], scope: `openid ${ALL}`,
    },
  ],
  jwks: JSON.parse(readFileSync(keysFile, 'utf8')),
  cookies: { keys: ['sediment-test-cookie-key'] },
  scopes: ['openid', ...ALL.split(' ')],
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource, client) => ({
        scope: grants[client.clientId] ?? '',
        audience: resource,
        accessTokenFormat: 'jwt',
        accessTokenTTL: 300,
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
  extraTokenClaims: (ctx, token) => ({
    preferred_username: token.accountId ?? actors[token.clientId],
  }),
});
provider.on('server_error', (ctx, err) => console.error('server_error', err));

const app = provider.callback();
const server = createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/test/grant') {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      const { client, scope } = JSON.parse(body);
      grants[client] = scope;
      res.writeHead(204).end();
    });
    return;
  }
  app(req, res);
});
server.listen(Number(port), '127.0.0.1', () => console.log(`ready ${issuer}`));
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
