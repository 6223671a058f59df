// A real OAuth 2.0 authorization server for the tests of people's own upstream accounts:
// oidc-provider on 127.0.0.1, where ToolHub is a confidential client that connects people's
// accounts (authorization code with PKCE), refreshes their tokens (refresh tokens are always
// issued and rotate at every use), exchanges them (RFC 8693, a grant registered here) and
// revokes them (RFC 7009). A second client, the upstream API, introspects the tokens it is
// sent (RFC 7662) to learn whose they are.
//
// Environment:
//   UPSTREAM_CLIENT_ID, UPSTREAM_CLIENT_SECRET   ToolHub's client
//   UPSTREAM_REDIRECT_URIS                       its redirect URIs, comma-separated
//   UPSTREAM_API_CLIENT_ID, UPSTREAM_API_SECRET  the upstream API's client (introspection)
//   UPSTREAM_ACCOUNTS_FILE   {"accounts": [{"login", "password", "sub"}]}
//   UPSTREAM_ACCESS_TTL      access token lifetime in seconds (default 3600)
//   UPSTREAM_EXCHANGE_AUDIENCE  the one audience a token exchange may ask for
// Prints one line, {"issuer": "http://127.0.0.1:<port>"}, once it listens.
//
// Test controls (plain HTTP, 127.0.0.1 only):
//   POST /_test/token-endpoint mode=ok|fail|hang   fail: the token endpoint answers 503;
//        hang: it reads the request and never answers (until mode=ok or the process ends)
//   GET  /_test/token-requests   the grant types the token endpoint answered, in order

import { randomBytes } from 'node:crypto';
import http from 'node:http';

import Provider, { errors } from 'oidc-provider';

import {
  HOST, accountsIn, escape, interactions as signInPages, page, readForm, required, send,
} from './sign_in_pages.mjs';

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const CLIENT_ID = required('UPSTREAM_CLIENT_ID');
const CLIENT_SECRET = required('UPSTREAM_CLIENT_SECRET');
const REDIRECT_URIS = required('UPSTREAM_REDIRECT_URIS').split(',').filter(Boolean);
const API_CLIENT_ID = required('UPSTREAM_API_CLIENT_ID');
const API_SECRET = required('UPSTREAM_API_SECRET');
const ACCOUNTS_FILE = required('UPSTREAM_ACCOUNTS_FILE');
const ACCESS_TTL = Number(process.env.UPSTREAM_ACCESS_TTL || 3600);
const EXCHANGE_AUDIENCE = process.env.UPSTREAM_EXCHANGE_AUDIENCE || '';

const { bySub, byLogin } = accountsIn(ACCOUNTS_FILE);

let tokenMode = 'ok';
const hanging = new Set();
const tokenRequests = [];

async function controls(req, res) {
  const url = new URL(req.url, `http://${HOST}`);
  if (url.pathname === '/_test/token-endpoint' && req.method === 'POST') {
    tokenMode = (await readForm(req)).mode || 'ok';
    if (tokenMode === 'ok') {
      for (const held of hanging) held.destroy();
      hanging.clear();
    }
    res.writeHead(204).end();
    return true;
  }
  if (url.pathname === '/_test/token-requests' && req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(tokenRequests));
    return true;
  }
  return false;
}

function interactions(provider, req, res) {
  return signInPages(provider, req, res, {
    byLogin,
    consent: (params) => [`${params.client_id} asks for ${params.scope || ''}.`, 'Allow'],
  });
}

// RFC 8693: the client presents an access token it holds for a person and asks for one
// meant for the configured audience; the new token acts for the same person, within the
// same grant and scopes, and says its audience (introspection shows it).
function registerTokenExchange(provider) {
  provider.registerGrantType(TOKEN_EXCHANGE, async (ctx) => {
    const { params, client } = ctx.oidc;
    if (params.subject_token_type !== ACCESS_TOKEN_TYPE) {
      throw new errors.InvalidRequest('subject_token_type must be an access token');
    }
    if (!params.audience || params.audience !== EXCHANGE_AUDIENCE) {
      throw new errors.InvalidTarget('this audience is not one tokens are exchanged for');
    }
    const subject = await provider.AccessToken.find(String(params.subject_token || ''));
    if (!subject || !subject.isValid || subject.clientId !== client.clientId) {
      throw new errors.InvalidGrant('the subject token is not a valid token of this client');
    }
    const token = new provider.AccessToken({
      accountId: subject.accountId,
      client,
      grantId: subject.grantId,
      scope: subject.scope,
      gty: 'token_exchange',
    });
    token.aud = params.audience;
    const value = await token.save();
    ctx.body = {
      access_token: value,
      issued_token_type: ACCESS_TOKEN_TYPE,
      token_type: 'Bearer',
      expires_in: token.expiration,
      scope: token.scope,
    };
  }, ['subject_token', 'subject_token_type', 'audience', 'requested_token_type', 'resource']);
}

const server = http.createServer();
server.listen(0, HOST, () => {
  const issuer = `http://${HOST}:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: REDIRECT_URIS,
        grant_types: ['authorization_code', 'refresh_token', TOKEN_EXCHANGE],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
      {
        client_id: API_CLIENT_ID,
        client_secret: API_SECRET,
        redirect_uris: [],
        grant_types: [],
        response_types: [],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    cookies: { keys: [randomBytes(32).toString('hex')] },
    scopes: ['openid', 'offline_access', 'profile'],
    claims: { openid: ['sub'], profile: ['name', 'preferred_username'] },
    features: {
      devInteractions: { enabled: false },
      introspection: { enabled: true },
      revocation: { enabled: true },
    },
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    pkce: { required: () => true },
    // Every connection may be refreshed, and a refresh token rotates at every use.
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    ttl: { AccessToken: ACCESS_TTL, RefreshToken: 24 * 3600 },
    async findAccount(ctx, sub) {
      const account = bySub(sub);
      if (!account) return undefined;
      return { accountId: sub, async claims() { return { sub, name: account.login, preferred_username: account.login }; } };
    },
  });
  registerTokenExchange(provider);
  provider.on('grant.success', (ctx) => tokenRequests.push(ctx.oidc.params.grant_type));
  provider.on('grant.error', (ctx) => tokenRequests.push(`${ctx.oidc.params?.grant_type} (refused)`));
  const app = provider.callback();
  server.on('request', (req, res) => {
    const path = new URL(req.url, issuer).pathname;
    if (path === '/token' && req.method === 'POST') {
      if (tokenMode === 'hang') {
        hanging.add(res.socket);
        req.resume();
        return;
      }
      if (tokenMode === 'fail') {
        req.resume();
        res.writeHead(503, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: 'temporarily_unavailable' }));
        return;
      }
    }
    controls(req, res)
      .then((handled) => handled || interactions(provider, req, res))
      .then((handled) => {
        if (!handled) app(req, res);
      })
      .catch((error) => {
        console.error(error);
        if (!res.headersSent) send(res, 500, page('Error', `<p>${escape(error.message)}</p>`));
      });
  });
  console.log(JSON.stringify({ issuer }));
});

const stop = () => {
  for (const held of hanging) held.destroy();
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
