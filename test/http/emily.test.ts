// Emily's private writes (src/http/emily.ts) through the pure handler: Emily's bodies on
// Emily's paths, with Emily's x-api-key, governed by the operator rules; every answer read
// as Emily's generated client reads it (test/support/emily.ts).
import { describe, expect, test } from 'vitest';
import {
  applyAll,
  createLimitsState,
  createService,
  decodeJson,
  getAccountLimits,
  getLimits,
  type HandleOptions,
  type HttpRequest,
  handleRequest,
  hashOperatorToken,
  hashThrottleSecret,
  type LimitsState,
  startThrottle,
  windowOf,
} from '../../src/index.js';
import { expectEmily } from '../support/emily.js';
import { expectDocumented } from '../support/openapi.js';

const OPS = 'emily-operations-token-0123456789';
const SIGNER = 'emily-signer-token-0123456789abcd';
const KEYS = 'emily-keys-token-0123456789abcdef';
const options: HandleOptions = {
  operators: [
    { name: 'emily-ops', tokenHash: hashOperatorToken(OPS), scopes: ['limits', 'keys'] },
    { name: 'signer', tokenHash: hashOperatorToken(SIGNER), scopes: ['chain'] },
    { name: 'key-keeper', tokenHash: hashOperatorToken(KEYS), scopes: ['keys'] },
  ],
};
const SECRET = 'a-throttle-secret-of-enough-length';

function send(
  state: LimitsState,
  method: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = { 'x-api-key': OPS },
  opts: HandleOptions = options,
) {
  const request: HttpRequest = {
    method,
    path,
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  };
  const r = handleRequest(state, request, opts);
  const template = path.startsWith('/limits/') ? '/limits/{account}' : path;
  return { ...r, template, json: r.response.body === '' ? undefined : decodeJson(r.response.body) };
}

const EMPTY = {
  availableToWithdraw: null,
  pegCap: null,
  perDepositCap: null,
  perDepositMinimum: null,
  perWithdrawalCap: null,
  rollingWithdrawalBlocks: null,
  rollingWithdrawalCap: null,
  throttleModeInitiator: null,
  rollingMintBlocks: null,
  rollingMintCap: null,
  rollingMintCapShare: null,
  availableToMint: null,
  accountCaps: {},
};

describe('x-api-key', () => {
  test('is taken wherever Authorization: Bearer is, for the same operator', () => {
    const s = createLimitsState();
    const viaKey = send(
      s,
      'POST',
      '/admin/events',
      { type: 'blockConnected', height: 7 },
      {
        'x-api-key': SIGNER,
      },
    );
    expect(viaKey.response.status).toBe(200);
    expect(viaKey.actor).toEqual({ kind: 'operator', name: 'signer' });
    const changes = handleRequest(
      s,
      { method: 'GET', path: '/admin/changes', headers: { 'x-api-key': OPS } },
      options,
    );
    expect(changes.response.status).toBe(200);
  });

  test('carries the same scopes: a chain key cannot set limits, and nothing changes', () => {
    const s = createLimitsState();
    const r = send(s, 'POST', '/limits', { pegCap: 5, accountCaps: {} }, { 'x-api-key': SIGNER });
    expect(r.response.status).toBe(403);
    expect(r.json).toMatchObject({ code: 'scope_denied' });
    expect(r.state).toBe(s);
    expectEmily('/limits', 'POST', r.response);
  });

  test('sent with Authorization naming another token is 400, and nothing changes', () => {
    const s = createLimitsState();
    const r = send(
      s,
      'POST',
      '/limits',
      { pegCap: 5 },
      {
        'x-api-key': OPS,
        authorization: `Bearer ${SIGNER}`,
      },
    );
    expect(r.response.status).toBe(400);
    expect(r.json).toMatchObject({ code: 'bad_request' });
    expect(r.state).toBe(s);
    expectEmily('/limits', 'POST', r.response);
  });

  test('sent with Authorization naming the same token is that operator', () => {
    const s = createLimitsState();
    const r = send(
      s,
      'POST',
      '/limits',
      { pegCap: 5 },
      {
        'x-api-key': OPS,
        authorization: `Bearer ${OPS}`,
      },
    );
    expect(r.response.status).toBe(201);
    expect(r.actor).toEqual({ kind: 'operator', name: 'emily-ops' });
  });

  test('a wrong or missing key is 401 and changes nothing', () => {
    const s = createLimitsState();
    for (const headers of [{ 'x-api-key': 'not-a-known-token-0123456789' }, {}]) {
      const r = send(s, 'POST', '/limits', { pegCap: 5 }, headers);
      expect(r.response.status).toBe(401);
      expect(r.state).toBe(s);
      expect(r.events).toEqual([]);
      expectEmily('/limits', 'POST', r.response);
    }
  });

  test('a key that holds no token is 400', () => {
    const r = send(createLimitsState(), 'POST', '/limits', { pegCap: 5 }, { 'x-api-key': 'a b' });
    expect(r.response.status).toBe(400);
    expect(r.json).toMatchObject({ code: 'bad_request' });
  });
});

describe('POST /limits', () => {
  test("sets the six global caps as given and the listed entries, answers 201 with Emily's Limits, and leaves unlisted entries", () => {
    const s = applyAll(createLimitsState(), [
      { type: 'accountLimitsSet', account: 'kept', limits: { pegCap: 9n } },
    ]);
    if (!s.ok) throw s.error;
    const r = send(s.state, 'POST', '/limits', {
      availableToWithdraw: 1,
      pegCap: 123,
      perDepositMinimum: 100,
      perDepositCap: 456,
      perWithdrawalCap: 789,
      rollingWithdrawalBlocks: 101,
      rollingWithdrawalCap: 112,
      throttleModeInitiator: null,
      accountCaps: {
        alice: {
          pegCap: 200,
          rollingWithdrawalBlocks: 200,
          rollingWithdrawalCap: 200,
          throttleModeInitiator: null,
        },
      },
    });
    expect(r.response.status).toBe(201);
    expectEmily('/limits', 'POST', r.response);
    expect(r.json).toEqual(
      decodeJson(
        JSON.stringify(getLimits(r.state), (_, v) => (typeof v === 'bigint' ? Number(v) : v)),
      ),
    );
    expect(getLimits(r.state)).toMatchObject({
      availableToWithdraw: 112n,
      pegCap: 123n,
      perDepositMinimum: 100n,
      perDepositCap: 456n,
      perWithdrawalCap: 789n,
      rollingWithdrawalBlocks: 101n,
      rollingWithdrawalCap: 112n,
    });
    expect(Object.keys(getLimits(r.state).accountCaps)).toEqual(['alice', 'kept']);
    expect(getAccountLimits(r.state, 'kept')?.pegCap).toBe(9n);
  });

  test('an absent or null cap is none', () => {
    const s = applyAll(createLimitsState(), [
      { type: 'limitsSet', limits: { pegCap: 5n, perWithdrawalCap: 7n } },
    ]);
    if (!s.ok) throw s.error;
    const r = send(s.state, 'POST', '/limits', { pegCap: null, accountCaps: {} });
    expect(r.response.status).toBe(201);
    expect(r.json).toEqual(EMPTY);
  });

  test.each([
    [{ rollingWithdrawalBlocks: 100 }, 'rollingWithdrawalCap'],
    [{ rollingWithdrawalCap: 100 }, 'rollingWithdrawalBlocks'],
  ])(
    "a window with blocks and no cap, or a cap and no blocks, is 400 as Emily's Limits::validate refuses it (%j)",
    (body, path) => {
      const s = createLimitsState();
      const r = send(s, 'POST', '/limits', { ...body, accountCaps: {} });
      expect(r.response.status).toBe(400);
      expect(r.json).toMatchObject({ code: 'incomplete_rolling_window', path });
      expect(r.state).toBe(s);
      expectEmily('/limits', 'POST', r.response);
    },
  );

  test("an account entry's window is held to the same rule, with the account in the path", () => {
    const r = send(createLimitsState(), 'POST', '/limits', {
      accountCaps: { bob: { rollingWithdrawalBlocks: 5 } },
    });
    expect(r.response.status).toBe(400);
    expect(r.json).toMatchObject({
      code: 'incomplete_rolling_window',
      path: 'accountCaps.bob.rollingWithdrawalCap',
    });
  });

  test('a field Emily does not have is 400 naming it, and nothing changes', () => {
    const s = createLimitsState();
    const r = send(s, 'POST', '/limits', { pegcap: 5 });
    expect(r.response.status).toBe(400);
    expect(r.json).toMatchObject({ code: 'unknown_field', path: 'pegcap' });
    expect(r.state).toBe(s);
  });

  test('a body that is not an object is 400', () => {
    const r = send(createLimitsState(), 'POST', '/limits', [1, 2]);
    expect(r.response.status).toBe(400);
    expect(r.json).toMatchObject({ code: 'invalid_request' });
    expectEmily('/limits', 'POST', r.response);
  });

  test("throttleModeInitiator null ends throttle mode (sBTC's manual recovery)", () => {
    const on = throttled(createLimitsState());
    const r = send(on, 'POST', '/limits', { perWithdrawalCap: 5, throttleModeInitiator: null });
    expect(r.response.status).toBe(201);
    expect(getLimits(r.state).throttleModeInitiator).toBeNull();
    expect(getLimits(r.state).perWithdrawalCap).toBe(5n);
    expect(r.events.map((e) => e.type)).toEqual(['limitsSet']);
  });

  test('the current initiator keeps throttle mode on, its caps set beneath the overlay', () => {
    const on = throttled(createLimitsState());
    const r = send(on, 'POST', '/limits', { perWithdrawalCap: 5, throttleModeInitiator: 'brake' });
    expect(r.response.status).toBe(201);
    expect(getLimits(r.state).throttleModeInitiator).toBe('brake');
    expect(r.events.map((e) => e.type)).toEqual(['limitsUpdated']);
    expectEmily('/limits', 'POST', r.response);
  });

  test('any other initiator is 400: throttle mode starts only through a key', () => {
    for (const state of [createLimitsState(), throttled(createLimitsState())]) {
      const r = send(state, 'POST', '/limits', { throttleModeInitiator: 'someone-else' });
      expect(r.response.status).toBe(400);
      expect(r.json).toMatchObject({ code: 'invalid_request', path: 'throttleModeInitiator' });
      expect(r.state).toBe(state);
    }
  });

  test('availableToWithdraw is ignored, as Emily ignores it', () => {
    const r = send(createLimitsState(), 'POST', '/limits', {
      rollingWithdrawalBlocks: 10,
      rollingWithdrawalCap: 100,
      availableToWithdraw: 99_999,
    });
    expect(r.response.status).toBe(201);
    expect(getLimits(r.state).availableToWithdraw).toBe(100n);
  });

  test('amounts stay exact past 2^53', () => {
    const r = send(createLimitsState(), 'POST', '/limits', '{"pegCap":9223372036854775807}');
    expect(r.response.status).toBe(201);
    expect(getLimits(r.state).pegCap).toBe(9223372036854775807n);
    expect(r.response.body).toContain('"pegCap":9223372036854775807');
  });
});

// Throttle mode on, started by the key "brake".
function throttled(state: LimitsState): LimitsState {
  const keyed = applyAll(state, [
    { type: 'throttleKeyAdded', name: 'brake', secretHash: hashThrottleSecret(SECRET) },
  ]);
  if (!keyed.ok) throw keyed.error;
  const on = startThrottle(keyed.state, { name: 'brake', secret: SECRET });
  if (!on.ok) throw on.error;
  return on.state;
}

describe('POST /limits/{account}', () => {
  test("replaces the account's entry and answers 201 with Emily's AccountLimits", () => {
    const s = applyAll(createLimitsState(), [
      { type: 'accountLimitsSet', account: 'alice', limits: { perWithdrawalCap: 3n } },
    ]);
    if (!s.ok) throw s.error;
    const r = send(s.state, 'POST', '/limits/alice', {
      pegCap: 100,
      perDepositMinimum: 100,
      perDepositCap: 100,
    });
    expect(r.response.status).toBe(201);
    expectEmily('/limits/{account}', 'POST', r.response);
    expect(r.json).toEqual({
      pegCap: 100n,
      perDepositCap: 100n,
      perDepositMinimum: 100n,
      perWithdrawalCap: null,
      rollingWithdrawalBlocks: null,
      rollingWithdrawalCap: null,
      throttleModeInitiator: null,
      rollingMintBlocks: null,
      rollingMintCap: null,
      rollingMintCapShare: null,
    });
  });

  test('all null removes the entry: 201 with every field null', () => {
    const s = applyAll(createLimitsState(), [
      { type: 'accountLimitsSet', account: 'alice', limits: { pegCap: 3n } },
    ]);
    if (!s.ok) throw s.error;
    const r = send(s.state, 'POST', '/limits/alice', { pegCap: null, throttleModeInitiator: null });
    expect(r.response.status).toBe(201);
    expect(getAccountLimits(r.state, 'alice')).toBeUndefined();
    expectEmily('/limits/{account}', 'POST', r.response);
  });

  test('a percent-encoded account is decoded, a malformed one is 400', () => {
    const r = send(createLimitsState(), 'POST', '/limits/al%20ice', { pegCap: 1 });
    expect(r.response.status).toBe(201);
    expect(getAccountLimits(r.state, 'al ice')?.pegCap).toBe(1n);
    const bad = send(createLimitsState(), 'POST', '/limits/%E0%A4%A', { pegCap: 1 });
    expect(bad.response.status).toBe(400);
    expect(bad.json).toMatchObject({ code: 'invalid_account' });
    expectEmily('/limits/{account}', 'POST', bad.response);
  });

  test('a minimum above its cap is 400: every rule of the caps holds here, though Emily takes it', () => {
    const r = send(createLimitsState(), 'POST', '/limits/alice', {
      perDepositMinimum: 654,
      perDepositCap: 456,
    });
    expect(r.response.status).toBe(400);
    expect(r.json).toMatchObject({ code: 'minimum_above_cap' });
  });
});

describe('POST /throttle and PATCH /throttle/…', () => {
  test('registers a key by name (201, no body), keeping a salted hash and never the secret', () => {
    const r = send(createLimitsState(), 'POST', '/throttle', { name: 'brake', secret: SECRET });
    expect(r.response.status).toBe(201);
    expect(r.response.body).toBe('');
    expectEmily('/throttle', 'POST', r.response);
    expect(
      JSON.stringify(r.events, (_, v) => (typeof v === 'bigint' ? String(v) : v)),
    ).not.toContain(SECRET);
    expect(startThrottle(r.state, { name: 'brake', secret: SECRET }).ok).toBe(true);
  });

  test('the same name again is 409', () => {
    const first = send(createLimitsState(), 'POST', '/throttle', { name: 'brake', secret: SECRET });
    const again = send(first.state, 'POST', '/throttle', { name: 'brake', secret: `${SECRET}-2` });
    expect(again.response.status).toBe(409);
    expect(again.json).toMatchObject({ code: 'duplicate_key' });
    expect(again.state).toBe(first.state);
    expectEmily('/throttle', 'POST', again.response);
  });

  test("a secret shorter than the service takes (Emily's own test uses 18 characters) is 400 saying the rule", () => {
    const s = createLimitsState();
    const r = send(s, 'POST', '/throttle', { name: 'brake', secret: 'very secret string' });
    expect(r.response.status).toBe(400);
    expect(r.json).toMatchObject({ code: 'weak_secret', path: 'secret' });
    expect((r.json as { message: string }).message).toMatch(/22 to 1024 characters/);
    expect(r.state).toBe(s);
    expectEmily('/throttle', 'POST', r.response);
  });

  test('deactivate and activate take the key by name, as a JSON string or as text, and answer 204', () => {
    const keyed = send(createLimitsState(), 'POST', '/throttle', {
      name: 'brake',
      secret: SECRET,
    }).state;
    const off = send(keyed, 'PATCH', '/throttle/deactivate', '"brake"');
    expect(off.response.status).toBe(204);
    expectEmily('/throttle/deactivate', 'PATCH', off.response);
    expect(startThrottle(off.state, { name: 'brake', secret: SECRET })).toMatchObject({
      ok: false,
      error: { code: 'key_revoked' },
    });
    const on = send(off.state, 'PATCH', '/throttle/activate', 'brake', {
      'x-api-key': OPS,
      'content-type': 'text/plain',
    });
    expect(on.response.status).toBe(204);
    expectEmily('/throttle/activate', 'PATCH', on.response);
    expect(startThrottle(on.state, { name: 'brake', secret: SECRET }).ok).toBe(true);
  });

  test('an unknown key is 404, as Emily answers', () => {
    const r = send(createLimitsState(), 'PATCH', '/throttle/deactivate', '"nobody"');
    expect(r.response.status).toBe(404);
    expect(r.json).toMatchObject({ code: 'unknown_key' });
    expectEmily('/throttle/deactivate', 'PATCH', r.response);
  });

  test("Emily's Argon2 hash of a key is no name here: 404", () => {
    const keyed = send(createLimitsState(), 'POST', '/throttle', {
      name: 'brake',
      secret: SECRET,
    }).state;
    const r = send(
      keyed,
      'PATCH',
      '/throttle/deactivate',
      JSON.stringify('$argon2id$v=19$m=19456,t=2,p=1$YWFh$abc'),
    );
    expect(r.response.status).toBe(404);
    expect(r.state).toBe(keyed);
  });

  test('a key needs the keys scope: a limits-only or chain operator is 403', () => {
    const r = send(
      createLimitsState(),
      'POST',
      '/throttle',
      { name: 'brake', secret: SECRET },
      { 'x-api-key': SIGNER },
    );
    expect(r.response.status).toBe(403);
    const keeper = send(
      createLimitsState(),
      'POST',
      '/throttle',
      { name: 'brake', secret: SECRET },
      { 'x-api-key': KEYS },
    );
    expect(keeper.response.status).toBe(201);
  });
});

describe('POST and PUT /chainstate', () => {
  const chainstate = (bitcoinBlockHeight: number | null, stacks = 10) => ({
    stacksBlockHeight: stacks,
    stacksBlockHash: `test-hash-${stacks}-fork-0`,
    bitcoinBlockHeight,
  });

  test('a height above the tip connects a block, and the answer is the Chainstate (201)', () => {
    const r = send(createLimitsState(), 'POST', '/chainstate', chainstate(100), {
      'x-api-key': SIGNER,
    });
    expect(r.response.status).toBe(201);
    expect(r.json).toEqual(decodeJson(JSON.stringify(chainstate(100))));
    expectEmily('/chainstate', 'POST', r.response);
    expect(r.events).toEqual([{ type: 'blockConnected', height: 100 }]);
    expect(r.state.tip).toBe(100);
  });

  test('a height below the tip reorganizes the window', () => {
    const at = send(createLimitsState(), 'POST', '/chainstate', chainstate(100), {
      'x-api-key': SIGNER,
    }).state;
    const r = send(at, 'PUT', '/chainstate', chainstate(98, 11), { 'x-api-key': SIGNER });
    expect(r.response.status).toBe(201);
    expectEmily('/chainstate', 'PUT', r.response);
    expect(r.events).toEqual([{ type: 'chainReorganized', height: 98 }]);
  });

  test('the same height changes nothing (many Stacks blocks share one Bitcoin block)', () => {
    const at = send(createLimitsState(), 'POST', '/chainstate', chainstate(100), {
      'x-api-key': SIGNER,
    }).state;
    const r = send(at, 'POST', '/chainstate', chainstate(100, 12), { 'x-api-key': SIGNER });
    expect(r.response.status).toBe(201);
    expect(r.events).toEqual([]);
    expect(r.state).toBe(at);
  });

  test('past the chain bounds is 409 and the tip stays', () => {
    const at = send(createLimitsState(), 'POST', '/chainstate', chainstate(100), {
      'x-api-key': SIGNER,
    }).state;
    for (const height of [100 + 145, 100 - 7]) {
      const r = send(at, 'POST', '/chainstate', chainstate(height), { 'x-api-key': SIGNER });
      expect(r.response.status).toBe(409);
      expect(r.json).toMatchObject({ code: 'chain_bound_exceeded' });
      expect(r.state).toBe(at);
      expectEmily('/chainstate', 'POST', r.response);
    }
  });

  test('past the chain bounds, the service tells the operators who tried (onNotice)', async () => {
    const notices: Array<Record<string, unknown>> = [];
    const service = createService({
      ...options,
      state: createLimitsState(),
      onNotice: (notice) => notices.push(notice),
    });
    const post = (height: number) =>
      service.handle({
        method: 'POST',
        path: '/chainstate',
        headers: { 'content-type': 'application/json', 'x-api-key': SIGNER },
        body: JSON.stringify(chainstate(height)),
      });
    expect((await post(100)).status).toBe(201);
    expect(notices).toEqual([]);
    expect((await post(100 + 145)).status).toBe(409);
    expect(notices).toEqual([
      expect.objectContaining({
        type: 'chainBoundRefused',
        actor: { kind: 'operator', name: 'signer' },
      }),
    ]);
  });

  test('a missing bitcoinBlockHeight is 400', () => {
    const r = send(createLimitsState(), 'POST', '/chainstate', chainstate(null), {
      'x-api-key': SIGNER,
    });
    expect(r.response.status).toBe(400);
    expect(r.json).toMatchObject({ code: 'invalid_request', path: 'bitcoinBlockHeight' });
    expectEmily('/chainstate', 'POST', r.response);
  });

  test('the chain scope is needed: the limits operator is 403', () => {
    const r = send(createLimitsState(), 'POST', '/chainstate', chainstate(100));
    expect(r.response.status).toBe(403);
  });
});

describe('loosening that waits', () => {
  const waiting: HandleOptions = { ...options, loosening: { delayBlocks: 6, quorum: 0 } };
  const capped = () => {
    const s = applyAll(createLimitsState(), [
      { type: 'blockConnected', height: 100 },
      { type: 'limitsSet', limits: { perWithdrawalCap: 1_000n } },
    ]);
    if (!s.ok) throw s.error;
    return s.state;
  };

  test('a loosening POST /limits is 202 with the pending change, and nothing applies', () => {
    const s = capped();
    const r = send(
      s,
      'POST',
      '/limits',
      { perWithdrawalCap: 2_000 },
      { 'x-api-key': OPS },
      waiting,
    );
    expect(r.response.status).toBe(202);
    expectDocumented('/limits', 'POST', r.response);
    expect(r.json).toMatchObject({ proposedBy: 'emily-ops', effectiveAt: 106n });
    expect(getLimits(r.state).perWithdrawalCap).toBe(1_000n);
  });

  test('a tightening POST /limits applies at once (201)', () => {
    const r = send(
      capped(),
      'POST',
      '/limits',
      { perWithdrawalCap: 500 },
      { 'x-api-key': OPS },
      waiting,
    );
    expect(r.response.status).toBe(201);
    expect(getLimits(r.state).perWithdrawalCap).toBe(500n);
  });

  test('revoking a key waits as a pending change (202), and reactivating one applies at once (204)', () => {
    const keyed = send(
      capped(),
      'POST',
      '/throttle',
      { name: 'brake', secret: SECRET },
      { 'x-api-key': OPS },
      waiting,
    ).state;
    const off = send(
      keyed,
      'PATCH',
      '/throttle/deactivate',
      '"brake"',
      { 'x-api-key': OPS },
      waiting,
    );
    expect(off.response.status).toBe(202);
    expectDocumented('/throttle/deactivate', 'PATCH', off.response);
    expect(startThrottle(off.state, { name: 'brake', secret: SECRET }).ok).toBe(true);
    const revoked = applyAll(keyed, [{ type: 'throttleKeyRevoked', name: 'brake' }]);
    if (!revoked.ok) throw revoked.error;
    const on = send(
      revoked.state,
      'PATCH',
      '/throttle/activate',
      '"brake"',
      { 'x-api-key': OPS },
      waiting,
    );
    expect(on.response.status).toBe(204);
    expect(startThrottle(on.state, { name: 'brake', secret: SECRET }).ok).toBe(true);
  });
});

describe('the paths without an operator', () => {
  test('without any operator, POST /limits is 405 (Allow: GET, HEAD) and the other writes 404', () => {
    const s = createLimitsState();
    const r = send(s, 'POST', '/limits', { pegCap: 1 }, { 'x-api-key': OPS }, {});
    expect(r.response.status).toBe(405);
    expect(r.response.headers.allow).toBe('GET, HEAD');
    for (const path of ['/throttle', '/chainstate', '/new_block']) {
      const w = send(s, 'POST', path, {}, { 'x-api-key': OPS }, {});
      expect(w.response.status, path).toBe(404);
    }
  });
});

describe("the window cap's share through Emily's POST /limits (an extension field)", () => {
  const shared = () =>
    send(createLimitsState(), 'POST', '/limits', {
      rollingWithdrawalBlocks: 10,
      rollingWithdrawalCap: 150,
      rollingWithdrawalCapShare: 1_000,
    }).state;

  test('sets it, and the answer stays valid against Emily’s Limits', () => {
    const r = send(createLimitsState(), 'POST', '/limits', {
      rollingWithdrawalBlocks: 10,
      rollingWithdrawalCap: 150,
      rollingWithdrawalCapShare: 1_000,
    });
    expect(r.response.status).toBe(201);
    expectEmily('/limits', 'POST', r.response);
    // No total observed yet: 10% of nothing.
    expect(r.json).toMatchObject({ rollingWithdrawalCap: 0n, availableToWithdraw: 0n });
  });

  test("a body that leaves it out, as Emily's clients do, keeps it", () => {
    const r = send(shared(), 'POST', '/limits', {
      rollingWithdrawalBlocks: 10,
      rollingWithdrawalCap: 200,
    });
    expect(r.response.status).toBe(201);
    expect(windowOfState(r.state)).toMatchObject({
      rollingWithdrawalCapFixed: 200n,
      rollingWithdrawalCapShare: 1_000n,
    });
  });

  test('an explicit null removes it (a loosening, which waits where loosening waits)', () => {
    const s = shared();
    const r = send(s, 'POST', '/limits', {
      rollingWithdrawalBlocks: 10,
      rollingWithdrawalCap: 150,
      rollingWithdrawalCapShare: null,
    });
    expect(windowOfState(r.state).rollingWithdrawalCapShare).toBeNull();
    const waits = send(
      s,
      'POST',
      '/limits',
      { rollingWithdrawalBlocks: 10, rollingWithdrawalCap: 150, rollingWithdrawalCapShare: null },
      { 'x-api-key': OPS },
      { ...options, loosening: { delayBlocks: 6, quorum: 0 } },
    );
    expect(waits.response.status).toBe(202);
    expect(waits.json).toMatchObject({
      loosens: [{ field: 'rollingWithdrawalCapShare', before: 1_000n, after: null }],
    });
  });

  test('a share outside 1..10,000 is 400 invalid_share, naming it', () => {
    const s = shared();
    const r = send(s, 'POST', '/limits', {
      rollingWithdrawalBlocks: 10,
      rollingWithdrawalCap: 150,
      rollingWithdrawalCapShare: 10_001,
    });
    expect(r.response.status).toBe(400);
    expect(r.json).toMatchObject({ code: 'invalid_share', path: 'rollingWithdrawalCapShare' });
    expect(r.state).toBe(s);
  });

  test("an account entry's share is kept the same way by POST /limits/{account}", () => {
    const s = send(createLimitsState(), 'POST', '/limits/alice', {
      rollingWithdrawalBlocks: 5,
      rollingWithdrawalCap: 9,
      rollingWithdrawalCapShare: 7,
    }).state;
    const r = send(s, 'POST', '/limits/alice', {
      rollingWithdrawalBlocks: 5,
      rollingWithdrawalCap: 8,
    });
    expect(r.response.status).toBe(201);
    expectEmily('/limits/{account}', 'POST', r.response);
    expect(windowOfState(r.state, 'alice')?.rollingWithdrawalCapShare).toBe(7n);
  });
});

function windowOfState(state: LimitsState, account?: string) {
  const w = windowOf(state, account);
  if (w === undefined) throw new Error('no window');
  return w;
}

describe("the mint window through Emily's writes", () => {
  test('the three fields are an extension: given they set, left out they stay, and availableToMint is ignored', () => {
    const set = send(createLimitsState(), 'POST', '/limits', {
      pegCap: 1_000,
      rollingMintBlocks: 6,
      rollingMintCap: 300,
      accountCaps: { bob: { pegCap: 500, rollingMintBlocks: 3, rollingMintCap: 50 } },
    });
    expect(set.response.status).toBe(201);
    expect(set.json).toMatchObject({ rollingMintBlocks: 6n, rollingMintCap: 300n });
    // An Emily client that knows none of them, writing back what it read: they stay.
    const kept = send(set.state, 'POST', '/limits', {
      pegCap: 1_000,
      availableToMint: 300,
      accountCaps: { bob: { pegCap: 500 } },
    });
    expect(kept.response.status).toBe(201);
    expect(kept.json).toMatchObject({
      rollingMintBlocks: 6n,
      rollingMintCap: 300n,
      accountCaps: { bob: { rollingMintBlocks: 3n, rollingMintCap: 50n } },
    });
    const account = send(kept.state, 'POST', '/limits/bob', { pegCap: 400 });
    expect(account.json).toMatchObject({ rollingMintBlocks: 3n, rollingMintCap: 50n });
    // Only null removes them.
    const removed = send(account.state, 'POST', '/limits', {
      pegCap: 1_000,
      rollingMintBlocks: null,
      rollingMintCap: null,
      accountCaps: {},
    });
    expect(removed.json).toMatchObject({ rollingMintBlocks: null, availableToMint: null });
    expectEmily('/limits', 'POST', removed.response);
  });

  test('a malformed availableToMint is refused with its path, the state unchanged', () => {
    const s = createLimitsState();
    const r = send(s, 'POST', '/limits', { availableToMint: -1, accountCaps: {} });
    expect(r.response.status).toBe(400);
    expect(r.json).toMatchObject({ code: 'invalid_amount', path: 'availableToMint' });
    expect(r.state).toBe(s);
  });
});
