import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import {
  applyAll,
  checkWithdrawal,
  createLimitsState,
  decodeJson,
  encodeJson,
  getLimits,
  hashThrottleSecret,
  type LimitsEvent,
  type LimitsState,
  type Snapshot,
  snapshotOf,
  stateFromSnapshot,
  whenAvailable,
} from '../../src/index.js';
import { snapshotParts } from '../../src/internal.js';
import { run } from '../support/helpers.js';
import { asVersion } from '../support/old-snapshots.js';

const SECRET = 'a-secret-of-at-least-22-characters';

/** A state that sets every kind of field a snapshot holds. */
function rich(): LimitsState {
  const start = createLimitsState({
    historyBlocks: 50,
    throttleProfile: {
      perWithdrawalCap: 70n,
      rollingWithdrawalBlocks: 6n,
      rollingWithdrawalCap: 90n,
    },
    limits: {
      pegCap: 10_000n,
      perDepositCap: 500n,
      perDepositMinimum: 5n,
      perWithdrawalCap: 300n,
      rollingWithdrawalBlocks: 10n,
      rollingWithdrawalCap: 1000n,
      accountCaps: {
        bob: { pegCap: 900n, rollingWithdrawalBlocks: 4n, rollingWithdrawalCap: 200n },
      },
    },
  });
  return run(
    start,
    { type: 'blockConnected', height: 100 },
    { type: 'withdrawalRequested', id: 'w1', account: 'bob', amount: 40n, height: 98 },
    {
      type: 'withdrawalRequested',
      id: 'w2',
      account: 'alice',
      amount: 9_223_372_036_854n,
      height: 100,
    },
    { type: 'withdrawalRejected', id: 'w2' },
    { type: 'withdrawalRequested', id: 'w3', account: 'alice', amount: 25n, height: 99 },
    { type: 'blockConnected', height: 103 },
    { type: 'chainReorganized', height: 101 },
    { type: 'peggedTotalObserved', total: 4000n },
    { type: 'peggedTotalObserved', total: 300n, account: 'bob' },
    { type: 'throttleKeyAdded', name: 'ops-1', secretHash: hashThrottleSecret(SECRET) },
    { type: 'throttleKeyAdded', name: 'ops-2', secretHash: hashThrottleSecret(SECRET) },
    { type: 'throttleKeyRevoked', name: 'ops-2' },
    { type: 'throttleStarted', initiator: 'ops-1' },
  );
}

function roundTrip(state: LimitsState): LimitsState {
  const r = stateFromSnapshot(decodeJson(encodeJson(snapshotOf(state))));
  if (!r.ok) throw r.error;
  return r.state;
}

describe('snapshotOf and stateFromSnapshot', () => {
  test('a snapshot holds everything, and the restored state answers alike', () => {
    const state = rich();
    const snap = snapshotOf(state);
    expect(snap.format).toBe('peg-limits/snapshot');
    expect(snap.version).toBe(7);
    expect(snap.tip).toBe(101);
    expect(snap.highestTip).toBe(103);
    expect(snap.withdrawals.map((w) => [w.id, w.height, w.rejected])).toEqual([
      ['w1', 98, false],
      ['w3', 99, false],
      ['w2', 100, true],
    ]);
    expect(snap.throttleKeys.map((k) => [k.name, k.revoked])).toEqual([
      ['ops-1', false],
      ['ops-2', true],
    ]);
    expect(snap.accountPeggedTotals).toEqual({ bob: '300' });
    const back = roundTrip(state);
    expect(getLimits(back)).toEqual(getLimits(state));
    for (const account of ['alice', 'bob', 'carol'])
      for (const amount of [1n, 60n, 150n, 250n]) {
        expect(checkWithdrawal(back, { account, amount })).toEqual(
          checkWithdrawal(state, { account, amount }),
        );
        expect(whenAvailable(back, { account, amount })).toBe(
          whenAvailable(state, { account, amount }),
        );
      }
    expect(encodeJson(snapshotOf(back))).toBe(encodeJson(snap));
  });

  test('a snapshot is JSON: JSON.stringify and JSON.parse restore the state exactly', () => {
    const state = rich();
    const r = stateFromSnapshot(JSON.parse(JSON.stringify(snapshotOf(state))));
    if (!r.ok) throw r.error;
    expect(encodeJson(snapshotOf(r.state))).toBe(encodeJson(snapshotOf(state)));
    expect(getLimits(r.state)).toEqual(getLimits(state));
  });

  test('a number where an amount belongs says how amounts are written', () => {
    const text = JSON.stringify(snapshotOf(rich()));
    const v3 = JSON.parse(text.replace(/"peggedTotal":"(\d+)"/, '"peggedTotal":$1'));
    const r3 = stateFromSnapshot(v3);
    expect(r3.ok).toBe(false);
    if (!r3.ok) {
      expect(r3.error.path).toBe('peggedTotal');
      expect(r3.error.message).toMatch(
        /as a decimal string, got the number \d+: a snapshot of version 3 or later carries amounts as strings/,
      );
    }
    // A version 2 snapshot read with JSON.parse: its integers became numbers.
    const v2 = JSON.parse(encodeJson(asVersion(snapshotOf(rich()), 2)));
    const r2 = stateFromSnapshot(v2);
    expect(r2.ok).toBe(false);
    if (!r2.ok) expect(r2.error.message).toMatch(/read its text with decodeJson/);
  });

  test('amounts past 2^53 stay exact through the text', () => {
    const state = run(createLimitsState({ limits: { pegCap: 9_223_372_036_854_775_807n } }), {
      type: 'peggedTotalObserved',
      total: 9_007_199_254_740_993n,
    });
    const text = encodeJson(snapshotOf(state));
    expect(text).toContain('"pegCap":"9223372036854775807"');
    expect(text).toContain('"peggedTotal":"9007199254740993"');
    expect(snapshotOf(roundTrip(state))).toEqual(snapshotOf(state));
    // Plain JSON keeps them too.
    const plain = stateFromSnapshot(JSON.parse(JSON.stringify(snapshotOf(state))));
    if (!plain.ok) throw plain.error;
    expect(snapshotOf(plain.state)).toEqual(snapshotOf(state));
  });

  test('the state before any block round-trips', () => {
    const state = createLimitsState();
    expect(snapshotOf(state).tip).toBeNull();
    expect(getLimits(roundTrip(state))).toEqual(getLimits(state));
  });

  test('the snapshot size follows the history, not the events seen', () => {
    let state = createLimitsState({ historyBlocks: 20 });
    const sizes: number[] = [];
    for (let b = 1; b <= 400; b++) {
      const events = [
        { type: 'blockConnected', height: b } as const,
        ...[0, 1, 2].map(
          (i) =>
            ({
              type: 'withdrawalRequested',
              id: `w${b}-${i}`,
              account: `a${i}`,
              amount: 10n,
              height: b,
            }) as const,
        ),
      ];
      const r = applyAll(state, events);
      if (!r.ok) throw r.error;
      state = r.state;
      if (b % 100 === 0) sizes.push(snapshotOf(state).withdrawals.length);
    }
    expect(sizes).toEqual([60, 60, 60, 60]);
  });
});

type Json = Record<string, unknown> | unknown[];

/** Every path to a leaf of a snapshot, with a value of the wrong type for it. */
function leaves(value: unknown, path: string[] = []): Array<[string[], unknown]> {
  if (Array.isArray(value)) return value.flatMap((v, i) => leaves(v, [...path, String(i)]));
  if (typeof value === 'object' && value !== null)
    return Object.entries(value).flatMap(([k, v]) => leaves(v, [...path, k]));
  const wrong = typeof value === 'string' ? 42n : typeof value === 'bigint' ? 'many' : 'x';
  return [[path, value === null ? 'x' : wrong]];
}

function pathText(path: string[]): string {
  return path.reduce(
    (out, p) => (/^\d+$/.test(p) ? `${out}[${p}]` : out === '' ? p : `${out}.${p}`),
    '',
  );
}

function setAt(root: unknown, path: string[], value: unknown): void {
  let node = root as Json;
  for (const p of path.slice(0, -1)) node = (node as Record<string, unknown>)[p] as Json;
  const last = path[path.length - 1]!;
  if (value === undefined) delete (node as Record<string, unknown>)[last];
  else (node as Record<string, unknown>)[last] = value;
}

function copy(snap: Snapshot): Record<string, unknown> {
  return decodeJson(encodeJson(snap)) as Record<string, unknown>;
}

describe('stateFromSnapshot refuses a broken snapshot with invalid_snapshot and the path', () => {
  const snap = snapshotOf(rich());

  test('every field broken in turn is named', () => {
    const all = leaves(copy(snap));
    expect(all.length).toBeGreaterThan(40);
    for (const [path, wrong] of all) {
      const broken = copy(snap);
      setAt(broken, path, wrong);
      const r = stateFromSnapshot(broken);
      expect(r.ok, pathText(path)).toBe(false);
      if (!r.ok) {
        expect(r.error.code).toBe('invalid_snapshot');
        expect(r.error.path, r.error.message).toBe(pathText(path));
        // The path is kept apart: the message does not repeat it.
        expect(r.error.message.startsWith(`${pathText(path)}: `), r.error.message).toBe(false);
      }
    }
  });

  test('every field left out is named as missing', () => {
    for (const [path] of leaves(copy(snap))) {
      const parent = path.slice(0, -1);
      // The fields of maps keyed by account are not fixed: leaving one out is valid.
      if (['accountCaps', 'accountPeggedTotals'].includes(parent.join('.'))) continue;
      if (/^\d+$/.test(path[path.length - 1]!)) continue;
      const broken = copy(snap);
      setAt(broken, path, undefined);
      const r = stateFromSnapshot(broken);
      expect(r.ok, pathText(path)).toBe(false);
      if (!r.ok) {
        expect(r.error.path).toBe(pathText(path));
        expect(r.error.message, pathText(path)).toMatch(/missing/);
      }
    }
  });

  const cases: Array<[string, (s: Record<string, unknown>) => void, string]> = [
    ['an unknown version', (s) => (s.version = 8n), 'version'],
    ['another format', (s) => (s.format = 'something-else'), 'format'],
    ['an unknown field', (s) => (s.extra = 1n), 'extra'],
    ['a tip above the highest tip', (s) => (s.tip = 104n), 'tip'],
    ['a tip without a highest tip', (s) => (s.highestTip = null), 'tip'],
    [
      'a reorganization deeper than the history',
      (s) => {
        s.tip = 40n;
        s.withdrawals = [];
      },
      'tip',
    ],
    [
      'a withdrawal above the tip',
      (s) => setAt(s, ['withdrawals', '2', 'height'], 102n),
      'withdrawals[2].height',
    ],
    [
      'a withdrawal older than the history',
      (s) => setAt(s, ['withdrawals', '0', 'height'], 20n),
      'withdrawals[0].height',
    ],
    ['an id twice', (s) => setAt(s, ['withdrawals', '1', 'id'], 'w1'), 'withdrawals[1].id'],
    [
      'a key name twice',
      (s) => setAt(s, ['throttleKeys', '1', 'name'], 'ops-1'),
      'throttleKeys[1].name',
    ],
    [
      'an entry with nothing set',
      (s) =>
        setAt(s, ['accountCaps', 'carol'], {
          pegCap: null,
          perDepositCap: null,
          perDepositMinimum: null,
          perWithdrawalCap: null,
          rollingWithdrawalBlocks: null,
          rollingWithdrawalCap: null,
          rollingWithdrawalCapShare: null,
          rollingMintBlocks: null,
          rollingMintCap: null,
          rollingMintCapShare: null,
        }),
      'accountCaps.carol',
    ],
    [
      'a window without its cap',
      (s) => setAt(s, ['limits', 'rollingWithdrawalCap'], null),
      'limits.rollingWithdrawalCap',
    ],
    [
      'a window longer than the history',
      (s) => setAt(s, ['accountCaps', 'bob', 'rollingWithdrawalBlocks'], 51n),
      'accountCaps.bob.rollingWithdrawalBlocks',
    ],
    [
      'a minimum above the cap',
      (s) => setAt(s, ['limits', 'perDepositMinimum'], 501n),
      'limits.perDepositMinimum',
    ],
    ['a negative pegged total', (s) => (s.peggedTotal = -1n), 'peggedTotal'],
    [
      'an account total of 0',
      (s) => setAt(s, ['accountPeggedTotals', 'bob'], 0n),
      'accountPeggedTotals.bob',
    ],
    [
      'a JS number as an amount',
      (s) => setAt(s, ['withdrawals', '0', 'amount'], 40),
      'withdrawals[0].amount',
    ],
    [
      'a malformed account name',
      (s) => setAt(s, ['withdrawals', '0', 'account'], 'a\u0007b'),
      'withdrawals[0].account',
    ],
    [
      'a malformed secret hash',
      (s) => setAt(s, ['throttleKeys', '0', 'secretHash'], 'sha256:x'),
      'throttleKeys[0].secretHash',
    ],
    ['withdrawals not a list', (s) => (s.withdrawals = {}), 'withdrawals'],
  ];
  for (const [what, breakIt, path] of cases) {
    test(`${what}: ${path}`, () => {
      const broken = copy(snap);
      breakIt(broken);
      const r = stateFromSnapshot(broken);
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.error.code).toBe('invalid_snapshot');
        expect(r.error.path).toBe(path);
      }
    });
  }

  test('what is not a snapshot at all is refused, not thrown', () => {
    for (const value of [null, undefined, 42, 'snapshot', [], new Map(), () => 1]) {
      const r = stateFromSnapshot(value);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.error.code).toBe('invalid_snapshot');
    }
  });

  const anyValue = fc.oneof(
    fc.constant(null),
    fc.constant(undefined),
    fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }),
    fc.integer(),
    fc.double(),
    fc.string({ maxLength: 300 }),
    fc.boolean(),
    fc.constant({}),
    fc.constant([]),
  );

  test.prop([fc.nat(), anyValue], { numRuns: 400 })(
    'a mutated snapshot is restored or refused with invalid_snapshot and a path, and never throws',
    (pick, value) => {
      const all = leaves(copy(snap));
      const [path] = all[pick % all.length]!;
      const broken = copy(snap);
      setAt(broken, path, value);
      const r = stateFromSnapshot(broken);
      if (r.ok) {
        // A mutation that is still valid gives a state whose own snapshot restores to it.
        const again = stateFromSnapshot(snapshotOf(r.state));
        expect(again.ok).toBe(true);
        if (again.ok) expect(snapshotOf(again.state)).toEqual(snapshotOf(r.state));
      } else {
        expect(r.error.code).toBe('invalid_snapshot');
        expect(typeof r.error.path).toBe('string');
        expect(r.error.message.length).toBeGreaterThan(0);
        expect(r.error.message.startsWith(`${r.error.path}: `)).toBe(false);
      }
    },
  );
});

describe('a snapshot in pieces', () => {
  test.each([1, 7, 2000])(
    'put back together (slices of %i), it is the snapshot, forgotten withdrawals left out',
    (slice) => {
      const entries: Record<string, { perWithdrawalCap: bigint }> = {};
      for (let i = 0; i < 300; i++) entries[`e${i}`] = { perWithdrawalCap: BigInt(i + 1) };
      const events: LimitsEvent[] = [{ type: 'limitsSet', limits: { accountCaps: entries } }];
      let n = 0;
      // A short history: most withdrawals are forgotten by the end, some are rejected.
      for (let h = 1; h <= 60; h++) {
        events.push({ type: 'blockConnected', height: h });
        for (let i = 0; i < 20; i++, n++) {
          events.push({
            type: 'withdrawalRequested',
            id: `w${n}`,
            account: `a${n % 7}`,
            amount: 1n,
            height: h,
          });
          if (n % 9 === 0) events.push({ type: 'withdrawalRejected', id: `w${n}` });
        }
      }
      const r = applyAll(createLimitsState({ historyBlocks: 20 }), events);
      if (!r.ok) throw r.error;
      const whole = snapshotOf(r.state);
      const parts = snapshotParts(r.state);
      expect(parts.head.withdrawals).toEqual([]);
      expect(parts.head.accountCaps).toEqual({});
      const accountCaps: Record<string, unknown> = {};
      for (let c = parts.nextEntries(slice); c !== undefined; c = parts.nextEntries(slice)) {
        expect(Object.keys(c).length).toBeLessThanOrEqual(slice);
        Object.assign(accountCaps, c);
      }
      const withdrawals = [];
      for (
        let w = parts.nextWithdrawals(slice);
        w !== undefined;
        w = parts.nextWithdrawals(slice)
      ) {
        expect(w.length).toBeLessThanOrEqual(slice);
        withdrawals.push(...w);
      }
      withdrawals.sort((a, b) => a.height - b.height || (a.id < b.id ? -1 : 1));
      const sorted = Object.fromEntries(
        Object.entries(accountCaps).sort(([a], [b]) => (a < b ? -1 : 1)),
      );
      expect(encodeJson({ ...parts.head, accountCaps: sorted, withdrawals })).toBe(
        encodeJson(whole),
      );
      expect(whole.withdrawals.length).toBe(20 * 20);
    },
  );
});
