// A real OpenID Connect provider for the single sign-on tests: oidc-provider (OpenID
// certified) on 127.0.0.1, with one client, a `groups` claim and accounts read from a JSON
// file at every use (so a test changes a person's groups between two sign-ins).
//
// Environment:
//   OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_REDIRECT_URI   the one client
//   OIDC_ACCOUNTS_FILE   {"accounts": [{"login", "password", "sub", "email", "name", "groups"}]}
//   OIDC_PORT            port to listen on (default 0: a free one)
// Prints one line, {"issuer": "http://127.0.0.1:<port>"}, once it listens.
//
// People sign in through the provider's interactions, served here as two small forms (a
// login form that checks the password, then a consent form), driven over HTTP by the tests.
//
// For the tests of what ToolHub refuses, POST /_test/next-id-token with mode=<mode> makes
// the provider change the ID token of its next token response to ToolHub, in one way each:
// re-signed unchanged (the control), for another audience, issuer or nonce, expired (each
// re-signed with the provider's own key), its claims altered without re-signing, unsigned
// (alg none), signed with a key the provider does not publish, or MACed with the client
// secret (HS256).

import { createHash, createHmac, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import http from 'node:http';

import Provider from 'oidc-provider';

import {
  HOST, accountsIn, escape, interactions as signInPages, page, readForm, required, send,
} from './sign_in_pages.mjs';

const CLIENT_ID = required('OIDC_CLIENT_ID');
const CLIENT_SECRET = required('OIDC_CLIENT_SECRET');
const REDIRECT_URI = required('OIDC_REDIRECT_URI');
const ACCOUNTS_FILE = required('OIDC_ACCOUNTS_FILE');
const PORT = Number(process.env.OIDC_PORT || 0);

const { bySub, byLogin } = accountsIn(ACCOUNTS_FILE);

// The provider's signing key (published in its JWKS), and one it never publishes.
const newKey = () => generateKeyPairSync('rsa', { modulusLength: 2048 });
const signing = newKey();
const foreign = newKey();
const KID = createHash('sha256').update(signing.publicKey.export({ format: 'der', type: 'spki' })).digest('base64url').slice(0, 16);
const privateJwk = { ...signing.privateKey.export({ format: 'jwk' }), kid: KID, alg: 'RS256', use: 'sig' };

const b64 = (value) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
const part = (text) => JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
const signed = (header, payload, key) => {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${sign('sha256', Buffer.from(input), key).toString('base64url')}`;
};

function mutate(token, mode) {
  const [h, p, s] = token.split('.');
  const header = part(h);
  const payload = part(p);
  const now = Math.floor(Date.now() / 1000);
  switch (mode) {
    case 'resign': return signed(header, payload, signing.privateKey);
    case 'audience': return signed(header, { ...payload, aud: 'another-client' }, signing.privateKey);
    case 'issuer': return signed(header, { ...payload, iss: 'http://127.0.0.1:9/another-issuer' }, signing.privateKey);
    case 'nonce': return signed(header, { ...payload, nonce: 'the-nonce-of-another-sign-in' }, signing.privateKey);
    case 'expired': return signed(header, { ...payload, iat: now - 7200, exp: now - 3600 }, signing.privateKey);
    case 'tampered': return `${h}.${b64({ ...payload, groups: [...(payload.groups || []), 'toolhub-admins'] })}.${s}`;
    case 'unsigned': return `${b64({ alg: 'none', typ: 'JWT' })}.${p}.`;
    case 'foreign-key': return signed(header, payload, foreign.privateKey);
    case 'hs256': {
      const input = `${b64({ alg: 'HS256', typ: 'JWT', kid: KID })}.${p}`;
      return `${input}.${createHmac('sha256', CLIENT_SECRET).update(input).digest('base64url')}`;
    }
    default: throw new Error(`unknown mode ${mode}`);
  }
}

let nextMode = null;

async function interactions(provider, req, res) {
  const url = new URL(req.url, `http://${HOST}`);
  if (url.pathname === '/_test/next-id-token' && req.method === 'POST') {
    nextMode = (await readForm(req)).mode || null;
    res.writeHead(204).end();
    return true;
  }
  return signInPages(provider, req, res, {
    byLogin,
    consent: (params) => [`${params.client_id} asks to know who you are.`, 'Continue'],
  });
}

const server = http.createServer();
server.listen(PORT, HOST, () => {
  const issuer = `http://${HOST}:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [{
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    }],
    jwks: { keys: [privateJwk] },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    scopes: ['openid', 'email', 'profile', 'groups'],
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name', 'preferred_username', 'given_name', 'family_name'],
      groups: ['groups'],
    },
    // The ID token carries the scopes' claims too (groups among them), as Entra ID's and
    // Keycloak's do; userinfo has them as well.
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    pkce: { required: () => true },
    async findAccount(ctx, sub) {
      const account = bySub(sub);
      if (!account) return undefined;
      return {
        accountId: sub,
        async claims() {
          return {
            sub,
            email: account.email,
            email_verified: true,
            name: account.name,
            preferred_username: account.login,
            groups: account.groups || [],
          };
        },
      };
    },
  });
  provider.use(async (ctx, next) => {
    await next();
    if (nextMode && ctx.oidc?.route === 'token' && ctx.status === 200 && ctx.body?.id_token) {
      const mode = nextMode;
      nextMode = null;
      ctx.body = { ...ctx.body, id_token: mutate(ctx.body.id_token, mode) };
    }
  });
  const app = provider.callback();
  server.on('request', (req, res) => {
    interactions(provider, req, res)
      .then((handled) => { if (!handled) app(req, res); })
      .catch((error) => {
        console.error(error);
        if (!res.headersSent) send(res, 500, page('Error', `<p>${escape(error.message)}</p>`));
      });
  });
  console.log(JSON.stringify({ issuer }));
});

const stop = () => { server.close(() => process.exit(0)); server.closeAllConnections(); };
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
