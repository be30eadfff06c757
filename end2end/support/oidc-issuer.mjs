// A small but real OpenID Connect issuer for strad's end-to-end tests.
//
// Built on `oidc-provider` (9.x). It has no login form: every authorization
// request goes through `/interaction/:uid`, which logs in as the current
// "next account" (default `alice`), grants the scopes/claims requested and
// redirects on. Every step of the login is a plain GET redirect (303), so it
// works for a browser and for an HTTP client that follows redirects manually,
// as long as that client keeps cookies for 127.0.0.1:
//   GET /auth?...           -> 303 /interaction/<uid>, sets op_interaction
//                              (path /interaction/<uid>) and
//                              op_interaction_resume (path /auth/<uid>)
//   GET /interaction/<uid>  -> needs op_interaction; 303 /auth/<uid>
//   GET /auth/<uid>         -> needs op_interaction_resume; 303 to the
//                              redirect_uri with code, state and iss; sets
//                              op_session (path /session/end)
//
// Usage:
//   PORT=0 CLIENT_ID=strad CLIENT_SECRET=secret \
//   REDIRECT_URI=http://127.0.0.1:3000/auth/callback \
//   [POST_LOGOUT_REDIRECT_URI=http://127.0.0.1:3000/] \
//   node end2end/support/oidc-issuer.mjs
//
// On start it prints exactly one line of JSON to stdout:
//   {"issuer":"http://127.0.0.1:NNNN","port":NNNN}
// and nothing else ever goes to stdout (all logging goes to stderr).
//
// Test control: `POST /test/next-account?sub=<sub>` (GET also accepted)
// selects the account for all following logins (sticky until changed);
// answers 204, or 400 for an unknown/missing sub.

import { createServer } from 'node:http';
import { generateKeyPairSync, randomBytes } from 'node:crypto';

// stdout is reserved for the single "ready" line. oidc-provider prints some
// notices with console.info, so route every console method to stderr before
// the library is loaded (hence the dynamic import below).
for (const method of ['log', 'info', 'debug', 'trace']) {
  console[method] = (...args) => console.error(...args);
}
const { default: Provider } = await import('oidc-provider');

function log(...args) {
  console.error('[oidc-issuer]', ...args);
}

function fail(message) {
  console.error(`[oidc-issuer] error: ${message}`);
  process.exit(2);
}

// ---------------------------------------------------------------------------
// Configuration from the environment
// ---------------------------------------------------------------------------

const rawPort = process.env.PORT ?? '';
const port = rawPort.trim() === '' ? 0 : Number(rawPort);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  fail(`PORT must be an integer between 0 and 65535, got ${JSON.stringify(rawPort)}`);
}

function requiredEnv(name) {
  const value = process.env[name];
  if (!value) fail(`environment variable ${name} is required`);
  return value;
}

function uriList(value) {
  return (value ?? '').split(',').map((s) => s.trim()).filter(Boolean);
}

const CLIENT_ID = requiredEnv('CLIENT_ID');
const CLIENT_SECRET = requiredEnv('CLIENT_SECRET');
const REDIRECT_URIS = uriList(requiredEnv('REDIRECT_URI'));
const POST_LOGOUT_REDIRECT_URIS = uriList(process.env.POST_LOGOUT_REDIRECT_URI);
if (REDIRECT_URIS.length === 0) fail('REDIRECT_URI must contain at least one URI');

// ---------------------------------------------------------------------------
// Accounts
// ---------------------------------------------------------------------------

const ACCOUNTS = {
  alice: { email: 'alice@example.com', email_verified: true, name: 'Alice Example' },
  bob: { email: 'bob@example.com', email_verified: false },
  carol: { email: 'carol@other.test', email_verified: true },
  erin: { email: 'erin@corp.test', email_verified: true, hd: 'corp.test' },
  frank: { email: 'frank@corp.test', email_verified: true }, // company address, no hd
};
const DEFAULT_ACCOUNT = 'alice';
let nextAccount = DEFAULT_ACCOUNT;

function hasAccount(sub) {
  return typeof sub === 'string' && Object.hasOwn(ACCOUNTS, sub);
}

async function findAccount(_ctx, sub) {
  if (!hasAccount(sub)) return undefined;
  return {
    accountId: sub,
    // oidc-provider filters these by the granted scopes/claims.
    async claims() {
      return { sub, ...ACCOUNTS[sub] };
    },
  };
}

// ---------------------------------------------------------------------------
// Provider
// ---------------------------------------------------------------------------

// Cookie names are prefixed so they cannot collide with the application's own
// cookies: cookies are scoped by host, not by port, and the app under test
// also runs on 127.0.0.1.
const COOKIE_NAMES = {
  session: 'op_session',
  interaction: 'op_interaction',
  resume: 'op_interaction_resume',
};

// The provider's session cookie is only ever sent back to the end_session
// routes (/session/end, /session/end/confirm, /session/end/success). The
// authorization endpoint therefore never sees an existing session, so every
// authorization request is a fresh login as the current "next account",
// while RP-initiated logout still finds the session it should end.
const SESSION_COOKIE_PATH = '/session/end';

function signingKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  return { ...jwk, kid: `e2e-${randomBytes(6).toString('hex')}`, use: 'sig', alg: 'RS256' };
}

// The logout confirmation page submits itself (a browser needs no click).
// A non-JavaScript client has to POST the form: xsrf=<value>&logout=yes.
async function logoutSource(ctx, form) {
  ctx.body = `<!DOCTYPE html>
<html>
<head><meta charset="utf-8"><title>Logout</title></head>
<body>
${form.replace('</form>', '<input type="hidden" name="logout" value="yes"/></form>')}
<noscript><button type="submit" form="op.logoutForm">Sign out</button></noscript>
<script>document.getElementById('op.logoutForm').submit();</script>
</body>
</html>`;
}

function buildProvider(issuer) {
  const configuration = {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: REDIRECT_URIS,
        post_logout_redirect_uris: POST_LOGOUT_REDIRECT_URIS,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
        id_token_signed_response_alg: 'RS256',
      },
    ],
    jwks: { keys: [signingKey()] },
    findAccount,
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified', 'hd'],
      profile: ['name'],
    },
    scopes: ['openid'],
    conformIdTokenClaims: false,
    // explicit TTLs (seconds) for artifacts whose defaults print notices
    ttl: { Grant: 3600, Session: 3600 },
    responseTypes: ['code'],
    pkce: { required: () => true }, // oidc-provider 9 only supports S256
    cookies: {
      names: COOKIE_NAMES,
      long: { httpOnly: true, sameSite: 'lax', path: SESSION_COOKIE_PATH },
      short: { httpOnly: true, sameSite: 'lax' },
    },
    features: {
      devInteractions: { enabled: false },
      userinfo: { enabled: true },
      rpInitiatedLogout: { enabled: true, logoutSource },
    },
    interactions: {
      // absolute, so clients that follow redirects by hand need not resolve it
      url: (_ctx, interaction) => `${issuer}/interaction/${interaction.uid}`,
    },
    renderError(ctx, out) {
      ctx.type = 'json';
      ctx.body = out;
    },
  };

  const provider = new Provider(issuer, configuration);

  for (const event of [
    'server_error',
    'authorization.error',
    'grant.error',
    'userinfo.error',
    'end_session.error',
    'introspection.error',
  ]) {
    provider.on(event, (_ctx, err) => {
      log(`${event}: ${err?.name ?? 'Error'}: ${err?.message ?? err}${err?.error_description ? ` (${err.error_description})` : ''}`);
    });
  }

  // Test control endpoint.
  provider.use(async (ctx, next) => {
    if (ctx.path !== '/test/next-account') return next();
    if (ctx.method !== 'POST' && ctx.method !== 'GET') {
      ctx.status = 405;
      ctx.set('Allow', 'GET, POST');
      return undefined;
    }
    const sub = ctx.query.sub;
    if (!hasAccount(sub)) {
      ctx.status = 400;
      ctx.type = 'json';
      ctx.body = { error: 'unknown_account', known: Object.keys(ACCOUNTS) };
      return undefined;
    }
    nextAccount = sub;
    log(`next account: ${sub}`);
    ctx.status = 204;
    return undefined;
  });

  // Login + consent without any UI.
  provider.use(async (ctx, next) => {
    const match = /^\/interaction\/([^/]+)$/.exec(ctx.path);
    if (!match) return next();
    if (ctx.method !== 'GET') {
      ctx.status = 405;
      ctx.set('Allow', 'GET');
      return undefined;
    }

    let interaction;
    try {
      interaction = await provider.interactionDetails(ctx.req, ctx.res);
    } catch (err) {
      // typically SessionNotFound: the op_interaction cookie was not sent
      log(`interaction ${match[1]}: ${err.message}`);
      ctx.status = err.statusCode ?? 500;
      ctx.type = 'json';
      ctx.body = { error: err.error ?? 'server_error', error_description: err.error_description ?? err.message };
      return undefined;
    }
    if (interaction.uid !== match[1]) {
      ctx.status = 400;
      ctx.type = 'json';
      ctx.body = { error: 'interaction_mismatch' };
      return undefined;
    }

    const { params, prompt } = interaction;
    const accountId = nextAccount;

    let grant;
    if (interaction.grantId) {
      const existing = await provider.Grant.find(interaction.grantId);
      if (existing && existing.accountId === accountId) grant = existing;
    }
    grant ??= new provider.Grant({ accountId, clientId: params.client_id });

    if (params.scope) grant.addOIDCScope(params.scope);
    if (prompt.details?.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
    if (prompt.details?.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
    if (params.claims) {
      try {
        const requested = JSON.parse(params.claims);
        const names = new Set([
          ...Object.keys(requested.id_token ?? {}),
          ...Object.keys(requested.userinfo ?? {}),
        ]);
        if (names.size) grant.addOIDCClaims([...names]);
      } catch {
        // malformed claims would have been rejected before the interaction
      }
    }
    const grantId = await grant.save();

    log(`interaction ${interaction.uid} (${prompt.name}): logging in as ${accountId}, scope "${params.scope ?? ''}"`);

    const returnTo = await provider.interactionResult(ctx.req, ctx.res, {
      login: { accountId, remember: true },
      consent: { grantId },
    }, { mergeWithLastSubmission: false });

    ctx.status = 303;
    ctx.redirect(returnTo);
    return undefined;
  });

  return provider;
}

// ---------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------

let handler = (_req, res) => {
  res.statusCode = 503;
  res.end();
};
const server = createServer((req, res) => handler(req, res));
server.on('error', (err) => fail(`server error: ${err.message}`));

server.listen(port, '127.0.0.1', () => {
  const actualPort = server.address().port;
  const issuer = `http://127.0.0.1:${actualPort}`;
  const provider = buildProvider(issuer);
  handler = provider.callback();
  process.stdout.write(`${JSON.stringify({ issuer, port: actualPort })}\n`);
  log(`listening; client_id=${CLIENT_ID} redirect_uris=${REDIRECT_URIS.join(',')}`);
});

let stopping = false;
function stop(signal) {
  if (stopping) return;
  stopping = true;
  log(`${signal} received, stopping`);
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
