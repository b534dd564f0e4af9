/**
 * What pages and clients need, against the pure handler: the check and window
 * endpoints, CORS, `message` in every problem, the dashboard route. Every answer is checked
 * against the OpenAPI document.
 */
import { describe, expect, test } from 'vitest';
import { DASHBOARD_HTML } from '../../src/http/documents/dashboard.js';
import {
  decodeJson,
  type HandleOptions,
  type HttpRequest,
  handleRequest,
  type LimitsState,
  windowOf,
} from '../../src/index.js';
import { admitRequest } from '../../src/internal.js';
import { at, run, withdraw } from '../support/helpers.js';
import { expectDocumented } from '../support/openapi.js';
import { TOKEN } from '../support/tokens.js';

const BIG = 9_223_372_036_854_775_807n;

function state(): LimitsState {
  return run(
    at(1000, {
      perWithdrawalCap: 600n,
      pegCap: BIG,
      perDepositMinimum: 10n,
      rollingWithdrawalBlocks: 144n,
      rollingWithdrawalCap: 1000n,
      accountCaps: { bob: { rollingWithdrawalBlocks: 10n, rollingWithdrawalCap: 100n } },
    }),
    withdraw('alice', 300n, 900),
    withdraw('bob', 80n, 995),
    withdraw('carol', 250n, 1000),
    { type: 'peggedTotalObserved', total: BIG - 100n },
  );
}

function get(
  s: LimitsState,
  template: string,
  path: string,
  options: HandleOptions = {},
  headers: Record<string, string> = {},
) {
  const { response } = handleRequest(s, { method: 'GET', path, headers }, options);
  expectDocumented(template, 'GET', response);
  return { ...response, json: decodeJson(response.body) as Record<string, unknown> };
}

describe('check endpoints', () => {
  const CHECK = '/limits/{account}/withdrawals/{amount}';
  const DEPOSIT = '/limits/{account}/deposits/{amount}';

  test('an admitted withdrawal: ok, and nothing else', () => {
    expect(get(state(), CHECK, '/limits/alice/withdrawals/370').json).toEqual({
      ok: true,
      reason: null,
      limit: null,
      availableAt: null,
    });
  });

  test('a withdrawal refused by the window says when it would pass', () => {
    const r = get(state(), CHECK, '/limits/alice/withdrawals/500');
    // 630 withdrawn of 1000: once the 300 at height 900 leaves (at 1044), 500 fits.
    expect(r.json).toEqual({
      ok: false,
      reason: 'rolling_cap_exceeded',
      limit: 370n,
      availableAt: 1044n,
    });
  });

  test("an account's own window refusal, and a refusal that never passes", () => {
    expect(get(state(), CHECK, '/limits/bob/withdrawals/30').json).toEqual({
      ok: false,
      reason: 'account_rolling_cap_exceeded',
      limit: 20n,
      availableAt: 1005n,
    });
    expect(get(state(), CHECK, '/limits/bob/withdrawals/601').json).toEqual({
      ok: false,
      reason: 'above_per_withdrawal_cap',
      limit: 600n,
      availableAt: null,
    });
  });

  test('deposits: exact at the int64 edge, availableAt always null', () => {
    expect(get(state(), DEPOSIT, '/limits/alice/deposits/100').json).toEqual({
      ok: true,
      reason: null,
      limit: null,
      availableAt: null,
    });
    const r = get(state(), DEPOSIT, `/limits/alice/deposits/${BIG}`);
    expect(r.body).toContain('"limit":100');
    expect(r.json).toEqual({
      ok: false,
      reason: 'peg_cap_exceeded',
      limit: 100n,
      availableAt: null,
    });
    expect(get(state(), DEPOSIT, '/limits/alice/deposits/9').json.reason).toBe('below_minimum');
  });

  test('a malformed amount or account is 400, with the code', () => {
    for (const amount of [
      '0',
      '-5',
      '1.5',
      'abc',
      '9223372036854775808',
      `${'9'.repeat(20)}`,
      '',
    ]) {
      const r = get(state(), CHECK, `/limits/alice/withdrawals/${amount}`);
      expect(r.status, amount).toBe(400);
      expect(r.json.code).toBe('invalid_amount');
    }
    const bad = get(state(), CHECK, '/limits/a%07b/withdrawals/5');
    expect(bad.status).toBe(400);
    expect(bad.json.code).toBe('invalid_account');
  });

  test('the largest amount is read exactly', () => {
    const r = get(state(), CHECK, `/limits/alice/withdrawals/${BIG}`);
    expect(r.json).toEqual({
      ok: false,
      reason: 'above_per_withdrawal_cap',
      limit: 600n,
      availableAt: null,
    });
  });
});

describe('window endpoints', () => {
  test('GET /window: the non-zero per-block sums in the window, the cap, what is left, the next release', () => {
    const r = get(state(), '/window', '/window');
    expect(r.json).toEqual({
      account: null,
      tip: 1000n,
      rollingWithdrawalBlocks: 144n,
      rollingWithdrawalCap: 1000n,
      rollingWithdrawalCapFixed: 1000n,
      rollingWithdrawalCapShare: null,
      pegCapFixed: BIG,
      peggedTotal: 9_223_372_036_854_775_707n,
      shareBasis: 9_223_372_036_854_775_707n,
      from: 857n,
      to: 1000n,
      withdrawn: 630n,
      complete: true,
      completeAt: null,
      heldFrom: null,
      availableToWithdraw: 370n,
      sums: [
        { height: 900n, amount: 300n },
        { height: 995n, amount: 80n },
        { height: 1000n, amount: 250n },
      ],
      nextRelease: { height: 1044n, amount: 300n },
      throttleModeInitiator: null,
    });
  });

  test("GET /window/{account} answers the account's own window, or 404 when it has none", () => {
    const r = get(state(), '/window/{account}', '/window/bob');
    expect(r.json).toMatchObject({
      account: 'bob',
      rollingWithdrawalBlocks: 10n,
      from: 991n,
      withdrawn: 80n,
      availableToWithdraw: 20n,
      sums: [{ height: 995n, amount: 80n }],
      nextRelease: { height: 1005n, amount: 80n },
    });
    const none = get(state(), '/window/{account}', '/window/alice');
    expect(none.status).toBe(404);
    expect(none.json.code).toBe('window_not_found');
  });

  test('before any block: no heights, the whole cap available', () => {
    const s = run(at(5, { rollingWithdrawalBlocks: 6n, rollingWithdrawalCap: 9n }), {
      type: 'chainReorganized',
      height: 4,
    });
    expect(windowOf(s)).toMatchObject({
      tip: 4,
      sums: [],
      availableToWithdraw: 9n,
      nextRelease: null,
    });
  });
});

describe('CORS', () => {
  const publicPaths: Array<[string, string]> = [
    ['/limits', '/limits'],
    ['/limits/{account}', '/limits/nobody'],
    ['/window', '/window'],
    ['/limits/{account}/withdrawals/{amount}', '/limits/alice/withdrawals/5'],
  ];

  test('by default any origin may read the public endpoints, errors included', () => {
    for (const [template, path] of publicPaths) {
      const r = get(state(), template, path, {}, { origin: 'https://bridge.example' });
      expect(r.headers['access-control-allow-origin'], path).toBe('*');
    }
  });

  test('a preflight on a public path is 204 with the methods and headers allowed', () => {
    const { response } = handleRequest(state(), {
      method: 'OPTIONS',
      path: '/start_throttle',
      headers: { origin: 'https://bridge.example', 'access-control-request-method': 'POST' },
    });
    expect(response.status).toBe(204);
    expect(response.headers).toMatchObject({
      'access-control-allow-origin': '*',
      'access-control-allow-methods': 'POST, OPTIONS',
      'access-control-allow-headers': 'content-type, peg-limits-min-position, if-none-match',
    });
  });

  test('a list of origins: the listed one is echoed, others get nothing, and answers vary by origin', () => {
    const options = { cors: ['https://a.example', 'https://b.example'] };
    const allowed = get(state(), '/limits', '/limits', options, { origin: 'https://b.example' });
    expect(allowed.headers['access-control-allow-origin']).toBe('https://b.example');
    expect(allowed.headers.vary).toBe('peg-limits-min-position, origin');
    const other = get(state(), '/limits', '/limits', options, { origin: 'https://evil.example' });
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
    expect(other.headers.vary).toBe('peg-limits-min-position, origin');
  });

  test('turned off: no CORS headers, and OPTIONS is 405 again', () => {
    const r = get(state(), '/limits', '/limits', { cors: false }, { origin: 'https://a.example' });
    expect(r.headers['access-control-allow-origin']).toBeUndefined();
    const { response } = handleRequest(
      state(),
      { method: 'OPTIONS', path: '/limits' },
      { cors: false },
    );
    expect(response.status).toBe(405);
  });

  test('a refusal before the body is read (415) carries the same CORS headers as any answer', () => {
    const head = {
      method: 'POST',
      path: '/start_throttle',
      headers: { 'content-type': 'text/plain' },
    };
    const r = admitRequest(head, {});
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.response.status).toBe(415);
      expect(r.response.headers['access-control-allow-origin']).toBe('*');
    }
    const admin = admitRequest({ ...head, path: '/admin/events' }, { adminToken: TOKEN });
    expect(admin.ok).toBe(false);
    if (!admin.ok) expect(admin.response.headers['access-control-allow-origin']).toBeUndefined();
  });

  test('POST /admin/events never gets CORS headers, and its preflight is refused', () => {
    const request: HttpRequest = {
      method: 'POST',
      path: '/admin/events',
      headers: {
        origin: 'https://a.example',
        authorization: `Bearer ${TOKEN}`,
        'content-type': 'application/json',
      },
      body: '{"type":"throttleEnded"}',
    };
    const options = { adminToken: TOKEN };
    const { response } = handleRequest(state(), request, options);
    expect(response.status).toBe(200);
    expect(response.headers['access-control-allow-origin']).toBeUndefined();
    const pre = handleRequest(state(), { ...request, method: 'OPTIONS', body: undefined }, options);
    expect(pre.response.status).toBe(405);
    expect(pre.response.headers['access-control-allow-origin']).toBeUndefined();
  });
});

test('every problem carries message, the same text as detail', () => {
  for (const path of [
    '/nowhere',
    '/limits/nobody',
    '/limits/alice/withdrawals/x',
    '/window/alice',
  ]) {
    const { response } = handleRequest(state(), { method: 'GET', path });
    const body = decodeJson(response.body) as { detail: string; message: string };
    expect(body.message.length).toBeGreaterThan(5);
    expect(body.message).toBe(body.detail);
  }
});

test('GET / serves the dashboard: one page with no outside resource', () => {
  const { response } = handleRequest(state(), { method: 'GET', path: '/' });
  expect(response.status).toBe(200);
  expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(response.body).toBe(DASHBOARD_HTML);
  // Nothing is loaded from anywhere else: no src/href to another place (the icon is inline,
  // a data: URL), no URL in styles.
  expect(DASHBOARD_HTML).not.toMatch(/\b(src|href)\s*=\s*(?!["']?data:)/i);
  expect(DASHBOARD_HTML).toMatch(/<link rel="icon" href="data:image\/svg\+xml,/);
  expect(DASHBOARD_HTML).not.toMatch(/url\(|@import|https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
});
