// What the test providers (oidc_provider.mjs, upstream_provider.mjs) share: their settings
// from the environment, their accounts file, and the pages a person signs in and consents
// on (oidc-provider's interactions, as two small forms the tests drive over HTTP).
import { readFileSync } from 'node:fs';
import { URLSearchParams } from 'node:url';

export const HOST = '127.0.0.1';

export const required = (name) => {
  const value = process.env[name];
  if (!value) {
    console.error(`${name} must be set`);
    process.exit(2);
  }
  return value;
};

// Read at every use, so a test changes an account between two sign-ins.
export const accountsIn = (file) => {
  const accounts = () => JSON.parse(readFileSync(file, 'utf8')).accounts;
  return {
    bySub: (sub) => accounts().find((a) => a.sub === sub),
    byLogin: (login) => accounts().find((a) => a.login === login),
  };
};

export const escape = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
export const page = (title, body) => `<!DOCTYPE html><html><head><meta charset="utf-8"><title>${escape(title)}</title></head><body><h1>${escape(title)}</h1>${body}</body></html>`;
const loginForm = (uid, error) => page('Sign-in', `${error ? `<p class="error">${escape(error)}</p>` : ''}
<form method="post" action="/interaction/${escape(uid)}/login">
<input name="login" autofocus><input name="password" type="password"><button type="submit">Sign in</button>
</form>`);
const consentForm = (uid, asks, button) => page('Authorize', `<p>${escape(asks)}</p>
<form method="post" action="/interaction/${escape(uid)}/confirm"><button type="submit">${escape(button)}</button></form>`);

export async function readForm(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
}

export function send(res, status, html) {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(html);
}

// The interaction pages at /interaction/<uid>[/login|/confirm]: true when the request was
// one. `byLogin` finds an account; `consent(params)` is the consent page's sentence and
// button for the authorization request's parameters.
export async function interactions(provider, req, res, { byLogin, consent }) {
  const url = new URL(req.url, `http://${HOST}`);
  const match = url.pathname.match(/^\/interaction\/([^/]+)(?:\/(login|confirm))?$/);
  if (!match) return false;
  const [, uid, step] = match;
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) {
    send(res, 400, page('Error', '<p>This interaction is not yours.</p>'));
    return true;
  }
  const prompt = details.prompt.name;
  if (req.method === 'GET') {
    const [asks, button] = consent(details.params);
    send(res, 200, prompt === 'login' ? loginForm(uid) : consentForm(uid, asks, button));
  } else if (step === 'login' && prompt === 'login') {
    const form = await readForm(req);
    const account = byLogin(form.login);
    if (!account || account.password !== form.password) {
      send(res, 200, loginForm(uid, 'Wrong login or password.'));
    } else {
      await provider.interactionFinished(req, res, { login: { accountId: account.sub } }, { mergeWithLastSubmission: false });
    }
  } else if (step === 'confirm' && prompt === 'consent') {
    await readForm(req);
    const { prompt: { details: missing }, params, session, grantId } = details;
    const grant = grantId
      ? await provider.Grant.find(grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    const saved = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId: saved } }, { mergeWithLastSubmission: true });
  } else {
    send(res, 400, page('Error', `<p>Unexpected step for prompt ${escape(prompt)}.</p>`));
  }
  return true;
}
