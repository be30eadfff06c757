// Standalone self-test for oidc-issuer.mjs: no browser, only node's fetch with
// manual redirects and a tiny cookie jar.
//
//   node end2end/support/oidc-issuer.selftest.mjs
//
// Exits 0 and prints a short summary on success; exits 1 on the first failure.

import { spawn } from 'node:child_process';
import { createHash, createPublicKey, randomBytes, verify } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';

const ISSUER_SCRIPT = fileURLToPath(new URL('./oidc-issuer.mjs', import.meta.url));
const CLIENT_ID = 'strad-e2e';
const CLIENT_SECRET = 'e2e secret: with/odd&chars';
// Nothing listens there: the flow stops when the issuer redirects to it.
const REDIRECT_URI = 'http://127.0.0.1:9/auth/callback';
const OTHER_REDIRECT_URI = 'http://127.0.0.1:9/other/callback';
const POST_LOGOUT_REDIRECT_URI = 'http://127.0.0.1:9/logged-out';

const b64url = (buf) => Buffer.from(buf).toString('base64url');
const random = () => b64url(randomBytes(32));

// ---------------------------------------------------------------------------
// Start the issuer
// ---------------------------------------------------------------------------

const child = spawn(process.execPath, [ISSUER_SCRIPT], {
  env: {
    ...process.env,
    PORT: '0',
    CLIENT_ID,
    CLIENT_SECRET,
    REDIRECT_URI: `${REDIRECT_URI},${OTHER_REDIRECT_URI}`,
    POST_LOGOUT_REDIRECT_URI,
  },
  stdio: ['ignore', 'pipe', 'pipe'],
});

let stderrText = '';
child.stderr.setEncoding('utf8');
child.stderr.on('data', (chunk) => { stderrText += chunk; });

const stdoutLines = [];
const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
const firstLine = new Promise((resolve, reject) => {
  const rl = createInterface({ input: child.stdout });
  rl.on('line', (line) => {
    stdoutLines.push(line);
    if (stdoutLines.length === 1) resolve(line);
  });
  exited.then(({ code }) => reject(new Error(`issuer exited early with code ${code}\n${stderrText}`)));
  setTimeout(() => reject(new Error(`issuer did not print its ready line within 15s\n${stderrText}`)), 15000).unref();
});

function die(err) {
  console.error(`oidc-issuer self-test FAILED: ${err?.stack ?? err}`);
  if (stderrText) console.error(`--- issuer stderr ---\n${stderrText}`);
  child.kill('SIGKILL');
  process.exit(1);
}

// ---------------------------------------------------------------------------
// Minimal cookie jar (single host: 127.0.0.1:<issuer port>)
// ---------------------------------------------------------------------------

class CookieJar {
  cookies = new Map(); // `${name};${path}` -> { name, value, path }

  store(setCookieHeaders, requestPath) {
    for (const header of setCookieHeaders) {
      const [pair, ...attrs] = header.split(';').map((s) => s.trim());
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      let path = requestPath.replace(/\/[^/]*$/, '') || '/';
      let expired = value === '';
      for (const attr of attrs) {
        const [k, v = ''] = attr.split('=');
        if (k.toLowerCase() === 'path' && v.startsWith('/')) path = v;
        if (k.toLowerCase() === 'expires' && Date.parse(v) <= Date.now()) expired = true;
        if (k.toLowerCase() === 'max-age' && Number(v) <= 0) expired = true;
      }
      const key = `${name};${path}`;
      if (expired) this.cookies.delete(key);
      else this.cookies.set(key, { name, value, path });
    }
  }

  forPath(requestPath) {
    return [...this.cookies.values()].filter(({ path }) => requestPath === path
      || (requestPath.startsWith(path) && (path.endsWith('/') || requestPath[path.length] === '/')));
  }

  header(requestPath) {
    return this.forPath(requestPath).map(({ name, value }) => `${name}=${value}`).join('; ');
  }
}

async function request(jar, url, init = {}) {
  const u = new URL(url);
  const headers = new Headers(init.headers);
  const sentCookies = jar.forPath(u.pathname).map((c) => c.name);
  const cookie = jar.header(u.pathname);
  if (cookie) headers.set('cookie', cookie);
  const res = await fetch(u, { ...init, headers, redirect: 'manual' });
  jar.store(res.headers.getSetCookie(), u.pathname);
  return { res, sentCookies };
}

// ---------------------------------------------------------------------------
// OIDC helpers
// ---------------------------------------------------------------------------

function basicAuth(id, secret) {
  // RFC 6749 section 2.3.1: form-urlencode both parts before base64.
  const enc = (s) => encodeURIComponent(s).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${enc(id)}:${enc(secret)}`).toString('base64')}`;
}

function decodeJwt(jwt) {
  const [h, p, s] = jwt.split('.');
  return {
    header: JSON.parse(Buffer.from(h, 'base64url')),
    payload: JSON.parse(Buffer.from(p, 'base64url')),
    signingInput: Buffer.from(`${h}.${p}`),
    signature: Buffer.from(s, 'base64url'),
  };
}

async function setNextAccount(discovery, sub) {
  const res = await fetch(`${discovery.issuer}/test/next-account?sub=${encodeURIComponent(sub)}`, { method: 'POST' });
  assert.equal(res.status, 204, `next-account ${sub} should answer 204`);
}

// Runs an authorization request and follows the issuer's redirects manually
// (GET only) until it redirects to the client's redirect_uri.
async function authorize(jar, discovery, params) {
  const url = new URL(discovery.authorization_endpoint);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v);

  const steps = [];
  let next = url.href;
  for (let hop = 0; hop < 10; hop += 1) {
    if (next.startsWith(params.redirect_uri)) return { callback: new URL(next), steps };
    assert.ok(next.startsWith(`${discovery.issuer}/`), `unexpected redirect target ${next}`);
    const { res, sentCookies } = await request(jar, next);
    steps.push({ path: new URL(next).pathname.replace(/\/[A-Za-z0-9_-]{16,}$/, '/:uid'), status: res.status, sentCookies });
    if (![302, 303].includes(res.status)) {
      throw new Error(`expected a redirect from ${next}, got ${res.status}: ${await res.text()}`);
    }
    next = new URL(res.headers.get('location'), next).href;
  }
  throw new Error('too many redirects');
}

async function redeem(discovery, code, verifier, redirectUri) {
  const res = await fetch(discovery.token_endpoint, {
    method: 'POST',
    headers: {
      authorization: basicAuth(CLIENT_ID, CLIENT_SECRET),
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    }),
  });
  return { status: res.status, body: await res.json() };
}

async function verifyIdToken(discovery, idToken) {
  const { header, payload, signingInput, signature } = decodeJwt(idToken);
  assert.equal(header.alg, 'RS256');
  const jwks = await (await fetch(discovery.jwks_uri)).json();
  const jwk = jwks.keys.find((k) => k.kid === header.kid);
  assert.ok(jwk, 'signing key is published in the JWKS');
  assert.equal(jwk.d, undefined, 'JWKS must not contain private key material');
  const key = createPublicKey({ key: jwk, format: 'jwk' });
  assert.ok(verify('sha256', signingInput, key, signature), 'ID token signature verifies');
  return payload;
}

async function login(jar, discovery, sub, { redirectUri = REDIRECT_URI } = {}) {
  await setNextAccount(discovery, sub);
  const state = random();
  const nonce = random();
  const verifier = random();
  const challenge = b64url(createHash('sha256').update(verifier).digest());

  const { callback, steps } = await authorize(jar, discovery, {
    response_type: 'code',
    client_id: CLIENT_ID,
    redirect_uri: redirectUri,
    scope: 'openid email profile',
    state,
    nonce,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  assert.equal(callback.searchParams.get('error'), null, `authorization error: ${callback.search}`);
  assert.equal(callback.searchParams.get('state'), state, 'state round-trips');
  assert.equal(callback.searchParams.get('iss'), discovery.issuer, 'iss authorization response parameter');
  const code = callback.searchParams.get('code');
  assert.ok(code, 'authorization code returned');

  const token = await redeem(discovery, code, verifier, redirectUri);
  assert.equal(token.status, 200, `token request failed: ${JSON.stringify(token.body)}`);
  assert.equal(token.body.token_type, 'Bearer');
  assert.ok(token.body.access_token, 'access_token present');
  assert.ok(token.body.id_token, 'id_token present');

  const claims = await verifyIdToken(discovery, token.body.id_token);
  assert.equal(claims.iss, discovery.issuer);
  assert.equal(claims.aud, CLIENT_ID);
  assert.equal(claims.sub, sub);
  assert.equal(claims.nonce, nonce, 'nonce round-trips');
  assert.ok(claims.exp > Date.now() / 1000);

  const userinfo = await fetch(discovery.userinfo_endpoint, {
    headers: { authorization: `Bearer ${token.body.access_token}` },
  });
  assert.equal(userinfo.status, 200, 'userinfo answers');
  const userinfoClaims = await userinfo.json();
  assert.equal(userinfoClaims.sub, sub);
  assert.equal(userinfoClaims.email, claims.email);

  const replay = await redeem(discovery, code, verifier, redirectUri);
  assert.equal(replay.status, 400, 'second redemption of the same code must fail');
  assert.equal(replay.body.error, 'invalid_grant');

  const afterReplay = await fetch(discovery.userinfo_endpoint, {
    headers: { authorization: `Bearer ${token.body.access_token}` },
  });
  // The replayed code revokes the grant (RFC 6749 §4.1.2), so the access token
  // from the first redemption is no longer valid.
  assert.equal(afterReplay.status, 401, 'access token revoked after code replay');

  return { claims, steps, idToken: token.body.id_token };
}

// ---------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------

async function main() {
  const ready = JSON.parse(await firstLine);
  assert.deepEqual(Object.keys(ready), ['issuer', 'port']);
  assert.equal(ready.issuer, `http://127.0.0.1:${ready.port}`);
  assert.ok(ready.port > 0);

  const discovery = await (await fetch(`${ready.issuer}/.well-known/openid-configuration`)).json();
  assert.equal(discovery.issuer, ready.issuer);
  assert.deepEqual(discovery.code_challenge_methods_supported, ['S256']);
  assert.ok(discovery.id_token_signing_alg_values_supported.includes('RS256'));
  for (const ep of ['authorization_endpoint', 'token_endpoint', 'jwks_uri', 'userinfo_endpoint', 'end_session_endpoint']) {
    assert.ok(discovery[ep]?.startsWith(`${ready.issuer}/`), `${ep} advertised`);
  }

  const badSub = await fetch(`${ready.issuer}/test/next-account?sub=mallory`, { method: 'POST' });
  assert.equal(badSub.status, 400, 'unknown sub is rejected');

  // One cookie jar for all logins, like a single browser: each login must
  // still be a fresh login as the selected account.
  const jar = new CookieJar();

  const alice = await login(jar, discovery, 'alice');
  assert.equal(alice.claims.email, 'alice@example.com');
  assert.equal(alice.claims.email_verified, true);
  assert.equal(alice.claims.name, 'Alice Example');
  assert.equal(alice.claims.hd, undefined);

  const erin = await login(jar, discovery, 'erin');
  assert.equal(erin.claims.email, 'erin@corp.test');
  assert.equal(erin.claims.email_verified, true);
  assert.equal(erin.claims.hd, 'corp.test');

  const frank = await login(jar, discovery, 'frank', { redirectUri: OTHER_REDIRECT_URI });
  assert.equal(frank.claims.email, 'frank@corp.test');
  assert.equal(frank.claims.hd, undefined);

  const bob = await login(jar, discovery, 'bob');
  assert.equal(bob.claims.email, 'bob@example.com');
  assert.equal(bob.claims.email_verified, false);

  // PKCE is mandatory.
  {
    const { callback } = await authorize(jar, discovery, {
      response_type: 'code',
      client_id: CLIENT_ID,
      redirect_uri: REDIRECT_URI,
      scope: 'openid email',
      state: 'no-pkce',
    });
    assert.equal(callback.searchParams.get('error'), 'invalid_request', 'authorization without PKCE is rejected');
  }

  // RP-initiated logout: GET end_session, then POST the (self-submitting) form.
  let logoutRedirect;
  {
    const endSession = new URL(discovery.end_session_endpoint);
    endSession.searchParams.set('id_token_hint', bob.idToken);
    endSession.searchParams.set('post_logout_redirect_uri', POST_LOGOUT_REDIRECT_URI);
    endSession.searchParams.set('state', 'bye');
    const { res } = await request(jar, endSession.href);
    assert.equal(res.status, 200);
    const html = await res.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1];
    assert.ok(action && xsrf, 'logout form present');
    const form = new URLSearchParams({ xsrf });
    if (/name="logout" value="yes"/.test(html)) form.set('logout', 'yes');
    const { res: confirm } = await request(jar, new URL(action, discovery.issuer).href, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
    });
    assert.equal(confirm.status, 303);
    logoutRedirect = confirm.headers.get('location');
    assert.equal(logoutRedirect, `${POST_LOGOUT_REDIRECT_URI}?state=bye`);
  }

  child.kill('SIGTERM');
  const exit = await exited;
  assert.equal(exit.code, 0, `issuer should exit 0 on SIGTERM, got ${JSON.stringify(exit)}`);
  assert.equal(stdoutLines.length, 1, `issuer printed extra stdout lines: ${JSON.stringify(stdoutLines.slice(1))}`);

  console.log('oidc-issuer self-test passed');
  console.log(`  ready line: ${stdoutLines[0]}`);
  console.log('  login redirect chain (cookies sent):');
  for (const s of alice.steps) console.log(`    GET ${s.path} -> ${s.status}  [${s.sentCookies.join(', ') || 'no cookies'}]`);
  for (const [who, c] of [['alice', alice], ['erin', erin], ['frank', frank], ['bob', bob]]) {
    const shown = ['sub', 'email', 'email_verified', 'name', 'hd'].filter((k) => k in c.claims).map((k) => `${k}=${c.claims[k]}`);
    console.log(`  ${who}: ${shown.join(' ')}  (nonce ok, code replay -> invalid_grant)`);
  }
  console.log('  no PKCE -> invalid_request; end_session -> ' + logoutRedirect + '; SIGTERM -> exit 0');
}

main().catch(die);
