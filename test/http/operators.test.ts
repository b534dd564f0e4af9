// Operators, scopes, chain bounds and loosening that waits, through the pure handler.
import { describe, expect, test } from 'vitest';
import { operatorsByHash } from '../../src/http/operators.js';
import {
  decodeJson,
  encodeJson,
  generateOperatorToken,
  getLimits,
  type HandleOptions,
  type HttpRequest,
  handleRequest,
  hashOperatorToken,
  hashThrottleSecret,
  type LimitsEvent,
  type LimitsState,
  type Operator,
  pendingChanges,
  startThrottle,
} from '../../src/index.js';
import { admitRequest, operatorsFromJson } from '../../src/internal.js';
import { at, run } from '../support/helpers.js';
import { expectDocumented } from '../support/openapi.js';

const FEEDER = generateOperatorToken();
const GOV1 = generateOperatorToken();
const GOV2 = generateOperatorToken();
const KEYS = generateOperatorToken();
const SECRET = 'a-throttle-secret-of-enough-length';

const OPERATORS: Operator[] = [
  { name: 'feeder', tokenHash: hashOperatorToken(FEEDER), scopes: ['chain'] },
  { name: 'gov-1', tokenHash: hashOperatorToken(GOV1), scopes: ['chain', 'limits', 'keys'] },
  { name: 'gov-2', tokenHash: hashOperatorToken(GOV2), scopes: ['limits', 'keys'] },
  { name: 'keys', tokenHash: hashOperatorToken(KEYS), scopes: ['keys'] },
];
const OPTIONS: HandleOptions = { operators: OPERATORS };
const WAITING: HandleOptions = { operators: OPERATORS, loosening: { delayBlocks: 6, quorum: 2 } };

function base(): LimitsState {
  return run(
    at(870_000, {
      perWithdrawalCap: 1000n,
      rollingWithdrawalBlocks: 144n,
      rollingWithdrawalCap: 5000n,
    }),
    { type: 'throttleKeyAdded', name: 'ops-1', secretHash: hashThrottleSecret(SECRET) },
  );
}

function post(events: unknown, token: string, headers: Record<string, string> = {}): HttpRequest {
  return {
    method: 'POST',
    path: '/admin/events',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers },
    body: encodeJson(events),
  };
}

function call(state: LimitsState, request: HttpRequest, options: HandleOptions, template: string) {
  const r = handleRequest(state, request, options);
  expectDocumented(template, request.method, r.response);
  return { ...r, body: decodeJson(r.response.body) as Record<string, unknown> };
}

const events = (state: LimitsState, list: LimitsEvent[], token: string, options = OPTIONS) =>
  call(state, post(list, token), options, '/admin/events');

describe('operators and their tokens', () => {
  test('only a token whose hash is registered finds an operator (a missing, unknown or malformed one is refused)', () => {
    const s = base();
    expect(events(s, [{ type: 'blockConnected', height: 870_001 }], FEEDER).response.status).toBe(
      200,
    );
    const unknown = events(
      s,
      [{ type: 'blockConnected', height: 870_001 }],
      generateOperatorToken(),
    );
    expect(unknown.response.status).toBe(401);
    expect(unknown.body.code).toBe('invalid_token');
    const missing = handleRequest(
      s,
      { ...post([], FEEDER), headers: { 'content-type': 'application/json' } },
      OPTIONS,
    );
    expect(missing.response.status).toBe(401);
    for (const authorization of [
      'Basic dXNlcjpwYXNz',
      `Bearer ${FEEDER} extra`,
      'Bearer',
      'Bearer a"b',
    ]) {
      const r = call(
        s,
        { ...post([], FEEDER), headers: { 'content-type': 'application/json', authorization } },
        OPTIONS,
        '/admin/events',
      );
      expect(r.response.status, authorization).toBe(400);
      expect(r.body.code).toBe('bad_request');
      expect(r.body.detail).toContain('Bearer <token>');
    }
  });

  test('a token known a moment ago is refused once the list in force no longer has it', () => {
    const s = base();
    const block = [{ type: 'blockConnected', height: 870_001 } as const];
    expect(events(s, block, FEEDER).response.status).toBe(200);
    // The list swapped (SIGHUP): the feeder's token hash was seen, its operator is gone.
    const without = { operators: OPERATORS.filter((o) => o.name !== 'feeder') };
    expect(events(s, block, FEEDER, without).response.status).toBe(401);
    expect(events(s, block, FEEDER).response.status).toBe(200);
  });

  test('a crowd of distinct tokens, long and short, never lets an unknown one in', () => {
    const s = base();
    const block = [{ type: 'blockConnected', height: 870_001 } as const];
    for (let i = 0; i < 600; i++) {
      const token = i % 2 === 0 ? generateOperatorToken() : `${'x'.repeat(200)}${i}`;
      expect(events(s, block, token).response.status).toBe(401);
    }
    expect(events(s, block, FEEDER).response.status).toBe(200);
  });

  test('an operator list given afresh per request, empty or not, is looked up by the same registry', () => {
    expect(operatorsByHash([], 'a-token')).toBe(operatorsByHash([], 'a-token'));
    expect(operatorsByHash(undefined, 'a-token')).toBe(operatorsByHash([], 'a-token'));
    expect(operatorsByHash(OPERATORS, undefined)).toBe(operatorsByHash(OPERATORS, undefined));
  });

  test('admission refuses a bad token before the body: 401, and 400 for a malformed header', () => {
    const head = {
      method: 'POST',
      path: '/admin/events',
      headers: {
        authorization: 'Bearer nope-nope-nope-nope-nope',
        'content-type': 'application/json',
      },
    };
    const r = admitRequest(head, OPTIONS);
    expect(r.ok ? 0 : r.response.status).toBe(401);
    const m = admitRequest({ ...head, headers: { authorization: 'Token x' } }, OPTIONS);
    expect(m.ok ? 0 : m.response.status).toBe(400);
  });

  test('the admin token is the operator admin with every scope, beside the list', () => {
    const admin = generateOperatorToken();
    const r = events(base(), [{ type: 'limitsSet', limits: {} }], admin, {
      ...OPTIONS,
      adminToken: admin,
    });
    expect(r.response.status).toBe(200);
  });

  test('with no operator at all the operator routes do not exist (404)', () => {
    const r = handleRequest(base(), post([], FEEDER), {});
    expect(r.response.status).toBe(404);
    expect(
      handleRequest(base(), { method: 'GET', path: '/admin/changes' }, {}).response.status,
    ).toBe(404);
  });

  test('operatorsFromJson names what is wrong: an unknown scope, a name or a hash twice, a malformed hash', () => {
    const ok = { name: 'a', tokenHash: hashOperatorToken(FEEDER), scopes: ['chain'] };
    const check = (list: unknown, reserved: string[] = []) => {
      const r = operatorsFromJson(list, reserved);
      return r.ok ? 'ok' : r.error.path;
    };
    expect(check([ok])).toBe('ok');
    expect(check([{ ...ok, scopes: ['chain', 'root'] }])).toBe('operators[0].scopes[1]');
    expect(check([{ ...ok, scopes: [] }])).toBe('operators[0].scopes');
    expect(check([ok, { ...ok, tokenHash: hashOperatorToken(GOV1) }])).toBe('operators[1].name');
    expect(check([ok, { ...ok, name: 'b' }])).toBe('operators[1].tokenHash');
    expect(check([{ ...ok, tokenHash: 'sha256:ABC' }])).toBe('operators[0].tokenHash');
    expect(check([{ ...ok, name: 'admin' }], ['admin'])).toBe('operators[0].name');
    expect(check([{ ...ok, token: 'x' }])).toBe('operators[0].token');
    expect(check({})).toBe('operators');
  });
});

describe('scopes', () => {
  test('the feeder feeds the chain, and nothing else: 403 scope_denied with the path, nothing applied', () => {
    const s = base();
    for (const [event, i] of [
      [{ type: 'limitsSet', limits: {} }, 1],
      [{ type: 'throttleKeyRevoked', name: 'ops-1' }, 1],
      [{ type: 'throttleEnded' }, 1],
      [{ type: 'accountLimitsSet', account: 'alice', limits: {} }, 1],
    ] as Array<[LimitsEvent, number]>) {
      const r = events(s, [{ type: 'blockConnected', height: 870_001 }, event], FEEDER);
      expect(r.response.status, event.type).toBe(403);
      expect(r.body).toMatchObject({ code: 'scope_denied', path: `[${i}]` });
      expect(r.body.detail).toContain(event.type);
      expect(r.state).toBe(s);
      expect(r.events).toEqual([]);
    }
  });

  test('a keys operator may revoke and add keys but not touch a cap', () => {
    const s = base();
    expect(events(s, [{ type: 'throttleKeyRevoked', name: 'ops-1' }], KEYS).response.status).toBe(
      200,
    );
    expect(events(s, [{ type: 'limitsSet', limits: {} }], KEYS).response.status).toBe(403);
    expect(events(s, [{ type: 'blockConnected', height: 870_001 }], KEYS).response.status).toBe(
      403,
    );
  });

  test("the service's own events are never taken from an operator", () => {
    const r = events(base(), [{ type: 'changeApproved', id: 1, by: 'gov-1' }], GOV1);
    expect(r.response.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'invalid_event', path: '[0].type' });
  });
});

describe('a batch the state refuses', () => {
  test('names the event at fault in the problem, and changes nothing', () => {
    const s = base();
    const r = events(
      s,
      [
        { type: 'blockConnected', height: 870_001 },
        { type: 'withdrawalRequested', id: 'w1', account: 'a', amount: 1n, height: 870_005 },
      ],
      FEEDER,
    );
    expect(r.response.status).toBe(409);
    expect(r.body).toMatchObject({ code: 'height_ahead_of_tip', path: '[1].height' });
    expect(r.state).toBe(s);
  });
});

describe('chain bounds over HTTP', () => {
  test('a block 145 above the tip is refused 409 chain_bound_exceeded to everyone, admin too, and changes nothing', () => {
    const admin = generateOperatorToken();
    const s = base();
    for (const token of [FEEDER, GOV1, admin]) {
      const r = events(s, [{ type: 'blockConnected', height: 870_145 }], token, {
        ...OPTIONS,
        adminToken: admin,
      });
      expect(r.response.status).toBe(409);
      expect(r.body).toMatchObject({ code: 'chain_bound_exceeded', path: '[0].height' });
      expect(r.body.detail).toContain('Peg-Limits-Override: chain-bounds');
      expect(r.state).toBe(s);
    }
    expect(events(s, [{ type: 'chainReorganized', height: 869_993 }], FEEDER).response.status).toBe(
      409,
    );
    expect(events(s, [{ type: 'blockConnected', height: 870_144 }], FEEDER).response.status).toBe(
      200,
    );
  });

  test('the override lifts them for an operator holding chain and limits, and only for one', () => {
    const s = base();
    const jump = [{ type: 'blockConnected', height: 880_000 }];
    const ok = call(
      s,
      post(jump, GOV1, { 'peg-limits-override': 'chain-bounds' }),
      OPTIONS,
      '/admin/events',
    );
    expect(ok.response.status).toBe(200);
    expect(ok.state.tip).toBe(880_000);
    const feeder = call(
      s,
      post(jump, FEEDER, { 'peg-limits-override': 'chain-bounds' }),
      OPTIONS,
      '/admin/events',
    );
    expect(feeder.response.status).toBe(403);
    expect(feeder.body.code).toBe('scope_denied');
    const other = call(
      s,
      post(jump, GOV1, { 'peg-limits-override': 'everything' }),
      OPTIONS,
      '/admin/events',
    );
    expect(other.response.status).toBe(400);
  });

  test('bounds of the caller: a huge maxTipAdvance lets any block through', () => {
    const r = events(base(), [{ type: 'blockConnected', height: 9_000_000_000 }], FEEDER, {
      ...OPTIONS,
      chainBounds: { maxTipAdvance: Number.MAX_SAFE_INTEGER, maxReorgDepth: 6 },
    });
    expect(r.response.status).toBe(200);
  });
});

describe('loosening that waits', () => {
  const raise: LimitsEvent = {
    type: 'limitsSet',
    limits: { perWithdrawalCap: 2000n, rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: 5000n },
  };

  test('with the default policy a loosening applies at once', () => {
    const r = events(base(), [raise], GOV1);
    expect(r.response.status).toBe(200);
    expect(getLimits(r.state).perWithdrawalCap).toBe(2000n);
  });

  test('where it waits, a loosening is 202 with the pending change, journaled as its proposal', () => {
    const s = base();
    const r = events(s, [raise], GOV1, WAITING);
    expect(r.response.status).toBe(202);
    expect(r.body).toMatchObject({
      id: 1n,
      proposedBy: 'gov-1',
      proposedAt: 870_000n,
      effectiveAt: 870_006n,
      delayBlocks: 6n,
      quorum: 2n,
      approvals: ['gov-1'],
    });
    expect(getLimits(r.state).perWithdrawalCap).toBe(1000n);
    expect(r.events).toEqual([
      { type: 'changeProposed', events: [raise], proposedBy: 'gov-1', delayBlocks: 6, quorum: 2 },
    ]);
    // Tightening never waits.
    const lower = events(
      s,
      [{ ...raise, limits: { ...raise.limits, perWithdrawalCap: 10n } }],
      GOV1,
      WAITING,
    );
    expect(lower.response.status).toBe(200);
  });

  test('changing one field changes one field: limitsUpdated raises one cap, and the 202 and the listing say what loosens, before and after', () => {
    const s = run(base(), {
      type: 'limitsSet',
      limits: {
        pegCap: 100n,
        perWithdrawalCap: 1000n,
        rollingWithdrawalBlocks: 144n,
        rollingWithdrawalCap: 5000n,
      },
    });
    const r = events(
      s,
      [{ type: 'limitsUpdated', limits: { perWithdrawalCap: 2000n } }],
      GOV1,
      WAITING,
    );
    expect(r.response.status).toBe(202);
    expect(r.body.loosens).toEqual([
      {
        kind: 'cap',
        account: null,
        field: 'perWithdrawalCap',
        before: 1000n,
        after: 2000n,
        view: 'effective',
      },
    ]);
    const listed = call(
      r.state,
      { method: 'GET', path: '/admin/changes', headers: { authorization: `Bearer ${GOV2}` } },
      WAITING,
      '/admin/changes',
    );
    expect((listed.body as unknown as Array<{ loosens: unknown }>)[0]?.loosens).toEqual(
      r.body.loosens,
    );
    // Once it applies, the other caps are as they were.
    const applied = run(r.state, { type: 'changeApproved', id: 1, by: 'gov-2' });
    expect(getLimits(applied)).toMatchObject({
      pegCap: 100n,
      perWithdrawalCap: 2000n,
      rollingWithdrawalCap: 5000n,
    });
    // A replace that leaves the peg cap out removes it, and its 202 says so.
    const replace = events(
      s,
      [{ type: 'limitsSet', limits: { perWithdrawalCap: 2000n } }],
      GOV1,
      WAITING,
    );
    expect(replace.response.status).toBe(202);
    const fields = (replace.body.loosens as Array<{ field?: string; after?: unknown }>).map((l) => [
      l.field,
      l.after,
    ]);
    expect(fields).toContainEqual(['pegCap', null]);
    expect(fields).toContainEqual(['perWithdrawalCap', 2000n]);
  });

  test('a batch that loosens one thing and tightens another waits', () => {
    const r = events(
      base(),
      [
        {
          type: 'limitsSet',
          limits: {
            perWithdrawalCap: 10n,
            rollingWithdrawalBlocks: 144n,
            rollingWithdrawalCap: 9000n,
          },
        },
      ],
      GOV1,
      WAITING,
    );
    expect(r.response.status).toBe(202);
  });

  test('a loosening mixed with chain events is refused 400 invalid_change, though the chain events alone pass', () => {
    const r = events(base(), [{ type: 'blockConnected', height: 870_001 }, raise], GOV1, WAITING);
    expect(r.response.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'invalid_change', path: '[0].type' });
  });

  test('the feeder is never held: a block that brings a change due applies it, answered 200', () => {
    let s = events(base(), [raise], GOV1, WAITING).state;
    for (let h = 870_001; h <= 870_005; h++)
      s = events(s, [{ type: 'blockConnected', height: h }], FEEDER, WAITING).state;
    expect(getLimits(s).perWithdrawalCap).toBe(1000n);
    const due = events(s, [{ type: 'blockConnected', height: 870_006 }], FEEDER, WAITING);
    expect(due.response.status).toBe(200);
    expect(due.body.perWithdrawalCap).toBe(2000n);
    expect(pendingChanges(due.state)).toEqual([]);
  });

  test('approve, list and cancel: scopes, quorum, twice, unknown and malformed ids', () => {
    const s = events(base(), [raise], GOV1, WAITING).state;
    const list = call(
      s,
      { method: 'GET', path: '/admin/changes', headers: { authorization: `Bearer ${FEEDER}` } },
      WAITING,
      '/admin/changes',
    );
    expect(list.response.status).toBe(200);
    expect((list.body as unknown as unknown[]).length).toBe(1);
    const approve = (token: string, id = '1') =>
      call(
        s,
        {
          method: 'POST',
          path: `/admin/changes/${id}/approve`,
          headers: { authorization: `Bearer ${token}` },
        },
        WAITING,
        '/admin/changes/{id}/approve',
      );
    expect(approve(FEEDER).response.status).toBe(403);
    expect(approve(KEYS).body.code).toBe('scope_denied');
    // The proposer again: nothing changes.
    const again = approve(GOV1);
    expect(again.response.status).toBe(200);
    expect(again.state).toBe(s);
    expect(again.events).toEqual([]);
    const quorum = approve(GOV2);
    expect(quorum.response.status).toBe(200);
    expect(quorum.body.perWithdrawalCap).toBe(2000n);
    expect(quorum.events).toEqual([{ type: 'changeApproved', id: 1, by: 'gov-2' }]);
    expect(approve(GOV2, '2').response.status).toBe(404);
    expect(approve(GOV2, '2').body.code).toBe('change_not_found');
    for (const id of ['0', 'x', '01', '99999999999999999'])
      expect(approve(GOV2, id).body.code, id).toBe('invalid_change_id');
    const cancel = call(
      s,
      { method: 'DELETE', path: '/admin/changes/1', headers: { authorization: `Bearer ${GOV2}` } },
      WAITING,
      '/admin/changes/{id}',
    );
    expect(cancel.response.status).toBe(200);
    expect(cancel.events).toEqual([{ type: 'changeCancelled', id: 1, by: 'gov-2' }]);
    expect(pendingChanges(cancel.state)).toEqual([]);
    const gone = call(
      cancel.state,
      {
        method: 'POST',
        path: '/admin/changes/1/approve',
        headers: { authorization: `Bearer ${GOV2}` },
      },
      WAITING,
      '/admin/changes/{id}/approve',
    );
    expect(gone.response.status).toBe(404);
  });

  test('a quorum reached for a change that no longer applies: 409 change_dropped, the drop journaled', () => {
    const s = base();
    const both: LimitsEvent[] = [
      raise,
      { type: 'throttleKeyAdded', name: 'ops-2', secretHash: hashThrottleSecret(SECRET) },
    ];
    const proposed = events(s, both, GOV1, WAITING).state;
    const raced = events(
      proposed,
      [{ type: 'throttleKeyAdded', name: 'ops-2', secretHash: hashThrottleSecret(SECRET) }],
      GOV1,
      WAITING,
    ).state;
    const r = call(
      raced,
      {
        method: 'POST',
        path: '/admin/changes/1/approve',
        headers: { authorization: `Bearer ${GOV2}` },
      },
      WAITING,
      '/admin/changes/{id}/approve',
    );
    expect(r.response.status).toBe(409);
    expect(r.body.code).toBe('change_dropped');
    expect(r.body.detail).toContain('ops-2');
    expect(r.events).toHaveLength(1);
    expect(pendingChanges(r.state)).toEqual([]);
    expect(getLimits(r.state).perWithdrawalCap).toBe(1000n);
  });

  test('a throttle start, by a key, cancels every pending change', () => {
    const s = events(base(), [raise], GOV1, WAITING).state;
    const t = startThrottle(s, { name: 'ops-1', secret: SECRET });
    if (!t.ok) throw t.error;
    expect(pendingChanges(t.state)).toEqual([]);
  });
});
