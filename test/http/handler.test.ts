import { describe, expect, test } from 'vitest';
import { ROUTES } from '../../src/http/routes.js';
import {
  decodeJson,
  generateThrottleSecret,
  getLimits,
  type HttpRequest,
  handleRequest,
  hashThrottleSecret,
  type LimitsState,
} from '../../src/index.js';
import { at, run } from '../support/helpers.js';
import { expectDocumented } from '../support/openapi.js';
import { TOKEN } from '../support/tokens.js';

const SECRET = generateThrottleSecret();
const BIG = 9_223_372_036_854_775_807n;

function base(): LimitsState {
  return run(
    at(870_000, { pegCap: BIG, rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: 1000n }),
    {
      type: 'accountLimitsSet',
      account: 'alice',
      limits: { perWithdrawalCap: 9_007_199_254_740_993n },
    },
    { type: 'accountLimitsSet', account: 'a/b c', limits: { pegCap: 5n } },
    { type: 'throttleKeyAdded', name: 'ops-1', secretHash: hashThrottleSecret(SECRET) },
    { type: 'throttleKeyAdded', name: 'ops-2', secretHash: hashThrottleSecret(SECRET) },
    { type: 'throttleKeyRevoked', name: 'ops-2' },
  );
}

const json = { 'content-type': 'application/json' };

function call(
  state: LimitsState,
  template: string,
  request: HttpRequest,
  options = { adminToken: TOKEN },
) {
  const result = handleRequest(state, request, options);
  expectDocumented(template, request.method, result.response);
  return { ...result, body: decodeJson(result.response.body) as Record<string, unknown> };
}

describe('GET /limits', () => {
  test("200 with Emily's nine fields and the mint window's four, null where unset, int64 exact, accountCaps an object", () => {
    const r = call(base(), '/limits', { method: 'GET', path: '/limits' });
    expect(r.response.status).toBe(200);
    expect(r.response.headers['content-type']).toBe('application/json');
    expect(Object.keys(r.body).sort()).toEqual(
      [
        'accountCaps',
        'availableToWithdraw',
        'pegCap',
        'perDepositCap',
        'perDepositMinimum',
        'perWithdrawalCap',
        'rollingWithdrawalBlocks',
        'rollingWithdrawalCap',
        'throttleModeInitiator',
        'rollingMintBlocks',
        'rollingMintCap',
        'rollingMintCapShare',
        'availableToMint',
      ].sort(),
    );
    expect(r.body.pegCap).toBe(BIG);
    expect(r.body.perDepositCap).toBeNull();
    expect(r.response.body).toContain('"pegCap":9223372036854775807');
    expect(r.response.body).toContain('"perWithdrawalCap":9007199254740993');
    expect(Object.keys(r.body.accountCaps as object)).toEqual(['a/b c', 'alice']);
  });

  test('accountCaps is an object even when empty, whatever the query string', () => {
    const r = call(at(1), '/limits', { method: 'GET', path: '/limits?x=1' });
    expect(r.body.accountCaps).toEqual({});
  });
});

describe('GET /limits/{account}', () => {
  test("201 with Emily's seven fields of the entry and its mint window's three", () => {
    const r = call(base(), '/limits/{account}', { method: 'GET', path: '/limits/alice' });
    expect(r.response.status).toBe(201);
    expect(r.body).toEqual({
      pegCap: null,
      perDepositCap: null,
      perDepositMinimum: null,
      perWithdrawalCap: 9_007_199_254_740_993n,
      rollingWithdrawalBlocks: null,
      rollingWithdrawalCap: null,
      throttleModeInitiator: null,
      rollingMintBlocks: null,
      rollingMintCap: null,
      rollingMintCapShare: null,
    });
  });

  test('the account is percent-decoded', () => {
    const r = call(base(), '/limits/{account}', { method: 'GET', path: '/limits/a%2Fb%20c' });
    expect(r.response.status).toBe(201);
    expect(r.body.pegCap).toBe(5n);
  });

  test('404 account_not_found when the account has no entry', () => {
    const r = call(base(), '/limits/{account}', { method: 'GET', path: '/limits/bob' });
    expect(r.response.status).toBe(404);
    expect(r.response.headers['content-type']).toBe('application/problem+json');
    expect(r.body).toMatchObject({
      status: 404n,
      code: 'account_not_found',
      type: 'urn:peg-limits:problem:account_not_found',
    });
    expect(r.body.detail).toMatch(/global limits apply/);
  });

  test('400 invalid_account for a malformed name', () => {
    for (const path of [
      '/limits/%E0%A4%A',
      '/limits/',
      '/limits/a%0Ab',
      `/limits/${'x'.repeat(257)}`,
    ]) {
      const r = call(base(), '/limits/{account}', { method: 'GET', path });
      expect(r.response.status, path).toBe(400);
      expect(r.body.code).toBe('invalid_account');
    }
  });
});

describe('POST /start_throttle', () => {
  const body = (value: unknown) => ({
    method: 'POST',
    path: '/start_throttle',
    headers: json,
    body: JSON.stringify(value),
  });

  test('200 with the Limits after the attempt, and the throttleStarted event to journal', () => {
    const s = base();
    const r = call(s, '/start_throttle', body({ name: 'ops-1', secret: SECRET }));
    expect(r.response.status).toBe(200);
    expect(r.body.throttleModeInitiator).toBe('ops-1');
    expect(r.body).toEqual(
      decodeJson(handleRequest(r.state, { method: 'GET', path: '/limits' }).response.body),
    );
    expect(r.events).toEqual([{ type: 'throttleStarted', initiator: 'ops-1' }]);
    const again = call(r.state, '/start_throttle', body({ name: 'ops-1', secret: SECRET }));
    expect(again.response.status).toBe(200);
    expect(again.events).toEqual([]);
    expect(again.state).toBe(r.state);
  });

  test('400 invalid_request: not JSON, missing, empty or non-string name or secret', () => {
    const s = base();
    const bad = [
      { ...body({}), body: '{' },
      body({ secret: SECRET }),
      body({ name: '', secret: SECRET }),
      body({ name: 'ops-1', secret: 5 }),
      body(['ops-1', SECRET]),
    ];
    for (const req of bad) {
      const r = call(s, '/start_throttle', req);
      expect(r.response.status, String(req.body)).toBe(400);
      expect(r.body.code).toBe('invalid_request');
      expect(r.state).toBe(s);
    }
  });

  test('a refusal tells a wrong secret from an unknown name in nothing (401 invalid_credentials), and a revoked key apart (403 key_revoked)', () => {
    const s = base();
    expect(
      call(s, '/start_throttle', body({ name: 'ops-1', secret: generateThrottleSecret() })).response
        .status,
    ).toBe(401);
    expect(call(s, '/start_throttle', body({ name: 'nobody', secret: SECRET })).body.code).toBe(
      'invalid_credentials',
    );
    const revoked = call(s, '/start_throttle', body({ name: 'ops-2', secret: SECRET }));
    expect(revoked.response.status).toBe(403);
    expect(revoked.body.code).toBe('key_revoked');
  });

  test('413 over 16 KiB, 415 when not application/json', () => {
    const s = base();
    const big = call(
      s,
      '/start_throttle',
      body({ name: 'ops-1', secret: SECRET, pad: 'x'.repeat(16 * 1024) }),
    );
    expect(big.response.status).toBe(413);
    expect(big.body.code).toBe('payload_too_large');
    const bytes = new TextEncoder().encode(JSON.stringify({ name: 'ops-1', secret: SECRET }));
    expect(call(s, '/start_throttle', { ...body({}), body: bytes }).response.status).toBe(200);
    const text = call(s, '/start_throttle', {
      ...body({}),
      headers: { 'Content-Type': 'text/plain' },
    });
    expect(text.response.status).toBe(415);
    expect(call(s, '/start_throttle', { ...body({}), headers: {} }).body.code).toBe(
      'unsupported_media_type',
    );
    const charset = call(s, '/start_throttle', {
      ...body({ name: 'ops-1', secret: SECRET }),
      headers: { 'Content-Type': 'application/json; charset=utf-8' },
    });
    expect(charset.response.status).toBe(200);
  });
});

describe('other paths and methods', () => {
  test('404 not_found for an unknown path', () => {
    const r = handleRequest(base(), { method: 'GET', path: '/nope' });
    expect(r.response.status).toBe(404);
    expect(decodeJson(r.response.body)).toMatchObject({ code: 'not_found', status: 404n });
  });

  test('405 method_not_allowed with Allow', () => {
    for (const [method, path, allow] of [
      ['POST', '/limits', 'GET, HEAD'],
      ['DELETE', '/limits/alice', 'GET, HEAD'],
      ['GET', '/start_throttle', 'POST'],
      ['PUT', '/openapi.json', 'GET, HEAD'],
    ] as const) {
      const r = handleRequest(base(), { method, path });
      expect(r.response.status).toBe(405);
      expect(r.response.headers.allow).toBe(allow);
    }
  });

  test('GET /openapi.json serves the document', () => {
    const r = call(base(), '/openapi.json', { method: 'GET', path: '/openapi.json' });
    expect(r.body.openapi).toBe('3.1.0');
  });
});

describe('POST /admin/events', () => {
  const events = (value: unknown, token = TOKEN) => ({
    method: 'POST',
    path: '/admin/events',
    headers: { ...json, authorization: `Bearer ${token}` },
    body:
      typeof value === 'string'
        ? value
        : JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? Number(v) : v)),
  });

  test('applies one event or an array, exactly, and returns the new Limits and the events', () => {
    const s = base();
    const text =
      '[{"type":"withdrawalRequested","id":"w1","account":"bob","amount":400,"height":870000},{"type":"limitsSet","limits":{"pegCap":9223372036854775806}}]';
    const r = call(s, '/admin/events', events(text));
    expect(r.response.status).toBe(200);
    expect(r.body.pegCap).toBe(BIG - 1n);
    expect(r.events).toHaveLength(2);
    expect(getLimits(r.state).pegCap).toBe(BIG - 1n);
    const one = call(r.state, '/admin/events', events({ type: 'blockConnected', height: 870_001 }));
    expect(one.state.tip).toBe(870_001);
  });

  test('an invalid event: its error as problem+json, and nothing of the request applied', () => {
    const s = base();
    const r = call(
      s,
      '/admin/events',
      events([
        { type: 'blockConnected', height: 870_001 },
        { type: 'blockConnected', height: 5 },
      ]),
    );
    expect(r.response.status).toBe(409);
    expect(r.body).toMatchObject({ code: 'height_not_above_tip', path: '[1].height' });
    expect(r.state).toBe(s);
    expect(r.events).toEqual([]);
    const malformed = call(
      s,
      '/admin/events',
      events([{ type: 'limitsSet', limits: { pegCap: -1 } }]),
    );
    expect(malformed.response.status).toBe(400);
    expect(malformed.body.code).toBe('invalid_amount');
    expect(call(s, '/admin/events', events([5])).body.code).toBe('invalid_event');
  });

  test('the operator route refuses a wrong token 401, and is 404 while no token is configured', () => {
    const s = base();
    const wrong = call(s, '/admin/events', events({ type: 'throttleEnded' }, 'nope'));
    expect(wrong.response.status).toBe(401);
    expect(wrong.response.headers['www-authenticate']).toBe('Bearer');
    for (const adminToken of [undefined, '']) {
      const r = handleRequest(s, events({ type: 'throttleEnded' }), { adminToken });
      expect(r.response.status).toBe(404);
    }
  });

  test('read endpoints need no credentials: each answers the same with none, a wrong one or the token', () => {
    // A state where every read has something to say: an entry with its own window, a block.
    const s = run(base(), {
      type: 'accountLimitsSet',
      account: 'alice',
      limits: {
        rollingWithdrawalBlocks: 10n,
        rollingWithdrawalCap: 100n,
        rollingMintBlocks: 10n,
        rollingMintCap: 100n,
      },
    });
    const reads = ROUTES.filter(
      (r) =>
        r.method === 'GET' &&
        r.access !== 'operator' &&
        !['/events', '/metrics'].includes(r.pattern),
    );
    expect(reads.length).toBeGreaterThanOrEqual(9);
    for (const route of reads) {
      const path = route.pattern.replace('{account}', 'alice').replace('{amount}', '5');
      const none = handleRequest(s, { method: 'GET', path }, { adminToken: 'op' }).response;
      expect(none.status, path).toBe(route.pattern === '/limits/{account}' ? 201 : 200);
      for (const authorization of ['Bearer nope', 'Bearer op']) {
        const withIt = handleRequest(
          s,
          { method: 'GET', path, headers: { authorization } },
          { adminToken: 'op' },
        ).response;
        expect(withIt, `${path} with ${authorization}`).toEqual(none);
      }
    }
  });
});

describe('errors speak JSON on the wire', () => {
  test('amounts as JSON numbers and types as JSON names them, in the problem text', () => {
    const r = call(base(), '/admin/events', {
      method: 'POST',
      path: '/admin/events',
      headers: { ...json, authorization: `Bearer ${TOKEN}` },
      body: '{"type":"withdrawalRequested","id":"w1","account":"bob","amount":-5,"height":870000}',
    });
    expect(r.response.status).toBe(400);
    expect(r.body.detail).toMatch(/got -5$/);
    expect(String(r.body.detail)).not.toMatch(/-5n|bigint/);
  });
});

describe('the OpenAPI check itself', () => {
  test('rejects bodies, statuses and media types the document does not describe', () => {
    const ok = { 'content-type': 'application/json' };
    expect(() =>
      expectDocumented('/limits', 'GET', { status: 200, headers: ok, body: '{"pegCap":"1"}' }),
    ).toThrow();
    expect(() =>
      expectDocumented('/limits', 'GET', { status: 418, headers: ok, body: '{}' }),
    ).toThrow();
    const r = handleRequest(base(), { method: 'GET', path: '/limits' });
    expect(() =>
      expectDocumented('/limits', 'GET', {
        ...r.response,
        headers: { 'content-type': 'text/plain' },
      }),
    ).toThrow();
    expectDocumented('/limits', 'GET', r.response);
  });
});
