// The loosening rule (src/core/loosening.ts): what makes a change wait.
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import {
  applyAll,
  type Caps,
  createLimitsState,
  hashThrottleSecret,
  type LimitsEvent,
  type LimitsState,
  loosenings,
  loosens,
  type ThrottleProfile,
} from '../../src/index.js';
import {
  type ChangeStep,
  changeStepArb,
  KEY_HASH,
  type Step,
  stepArb,
  toEvent,
} from '../support/arbitraries.js';
import { run } from '../support/helpers.js';
import { NaiveModel, naiveLoosens } from '../support/model.js';

const HISTORY = 10;
const PROFILE: ThrottleProfile = {
  perWithdrawalCap: 200n,
  rollingWithdrawalBlocks: 6n,
  rollingWithdrawalCap: 400n,
};

const base = () =>
  run(
    createLimitsState({
      historyBlocks: HISTORY,
      throttleProfile: PROFILE,
      limits: {
        pegCap: 5000n,
        perDepositCap: 500n,
        perDepositMinimum: 10n,
        perWithdrawalCap: 300n,
        rollingWithdrawalBlocks: 4n,
        rollingWithdrawalCap: 1000n,
        accountCaps: { alice: { perWithdrawalCap: 100n, pegCap: 700n } },
      },
    }),
    { type: 'blockConnected', height: 100 },
    { type: 'throttleKeyAdded', name: 'ops-1', secretHash: hashThrottleSecret('s'.repeat(22)) },
  );

function applied(state: LimitsState, ...events: LimitsEvent[]): LimitsState {
  return run(state, ...events);
}

describe('what loosens', () => {
  test('raising or removing a cap loosens it, lowering does not', () => {
    const s = base();
    expect(
      loosenings(s, applied(s, { type: 'limitsSet', limits: { perWithdrawalCap: 400n } })),
    ).toContainEqual({
      kind: 'cap',
      account: null,
      field: 'perWithdrawalCap',
      before: 300n,
      after: 400n,
      view: 'effective',
    });
    const lowered = applied(s, {
      type: 'limitsSet',
      limits: {
        pegCap: 4000n,
        perDepositCap: 400n,
        perDepositMinimum: 20n,
        perWithdrawalCap: 200n,
        rollingWithdrawalBlocks: 8n,
        rollingWithdrawalCap: 900n,
      },
    });
    expect(loosenings(s, lowered)).toEqual([]);
    // limitsSet leaves a field out: that cap is removed, a loosening.
    expect(
      loosens(
        s,
        applied(s, {
          type: 'limitsSet',
          limits: {
            pegCap: 5000n,
            perDepositCap: 500n,
            perDepositMinimum: 10n,
            rollingWithdrawalBlocks: 4n,
            rollingWithdrawalCap: 1000n,
          },
        }),
      ),
    ).toBe(true);
  });

  test('a shorter window or a lower minimum loosens, a longer window does not', () => {
    const s = base();
    const shorter = applied(s, {
      type: 'limitsSet',
      limits: { ...capsOf(s), rollingWithdrawalBlocks: 3n },
    });
    expect(loosenings(s, shorter).map((l) => l.kind === 'cap' && l.field)).toEqual([
      'rollingWithdrawalBlocks',
    ]);
    const lower = applied(s, {
      type: 'limitsSet',
      limits: { ...capsOf(s), perDepositMinimum: 5n },
    });
    expect(loosenings(s, lower).map((l) => l.kind === 'cap' && l.field)).toEqual([
      'perDepositMinimum',
    ]);
    expect(
      loosens(
        s,
        applied(s, { type: 'limitsSet', limits: { ...capsOf(s), rollingWithdrawalBlocks: 9n } }),
      ),
    ).toBe(false);
  });

  test("an entry's own caps: raised, removed, or an entry whose null minimum means none", () => {
    const s = base();
    // alice's perWithdrawalCap 100 → 200: her effective cap rises.
    expect(
      loosenings(
        s,
        applied(s, {
          type: 'accountLimitsSet',
          account: 'alice',
          limits: { perWithdrawalCap: 200n, pegCap: 700n },
        }),
      ),
    ).toEqual([
      {
        kind: 'cap',
        account: 'alice',
        field: 'perWithdrawalCap',
        before: 100n,
        after: 200n,
        view: 'effective',
      },
    ]);
    // Removing her entry: back to the global 300, and her own peg cap is gone.
    const fields = loosenings(
      s,
      applied(s, { type: 'accountLimitsSet', account: 'alice', limits: {} }),
    ).map((l) => l.kind === 'cap' && `${l.account}.${l.field}`);
    expect(fields).toEqual(['alice.perWithdrawalCap', 'alice.accountPegCap']);
    // A new entry for bob with only a peg cap: its null minimum means no minimum (the global
    // one was 10), so it loosens although it adds a cap.
    expect(
      loosenings(
        s,
        applied(s, { type: 'accountLimitsSet', account: 'bob', limits: { pegCap: 50n } }),
      ),
    ).toEqual([
      {
        kind: 'cap',
        account: 'bob',
        field: 'perDepositMinimum',
        before: 10n,
        after: null,
        view: 'effective',
      },
    ]);
  });

  test('ending throttle mode or revoking a key loosens, starting it or adding a key does not', () => {
    const s = base();
    const braked = applied(s, { type: 'throttleStarted', initiator: 'ops-1' });
    expect(loosens(s, braked)).toBe(false);
    expect(loosenings(braked, applied(braked, { type: 'throttleEnded' }))).toContainEqual({
      kind: 'throttleEnded',
      initiator: 'ops-1',
    });
    // limitsSet ends throttle mode too, whatever caps it sets.
    expect(
      loosens(braked, applied(braked, { type: 'limitsSet', limits: { perWithdrawalCap: 1n } })),
    ).toBe(true);
    expect(loosenings(s, applied(s, { type: 'throttleKeyRevoked', name: 'ops-1' }))).toEqual([
      { kind: 'keyRevoked', name: 'ops-1' },
    ]);
    expect(
      loosens(s, applied(s, { type: 'throttleKeyAdded', name: 'ops-2', secretHash: KEY_HASH })),
    ).toBe(false);
  });

  test('under throttle mode, a configured cap raised behind the overlay loosens', () => {
    // perWithdrawalCap 300 is seen as min(300, 200) = 200; raising it to 1000 still shows 200,
    // but shows 1000 the moment the brake is released.
    const braked = applied(base(), { type: 'throttleStarted', initiator: 'ops-1' });
    const raised = applied(braked, {
      type: 'accountLimitsSet',
      account: 'alice',
      limits: { perWithdrawalCap: 100n, pegCap: 700n },
    });
    expect(loosens(braked, raised)).toBe(false);
    const behind = run(braked, {
      type: 'accountLimitsSet',
      account: 'carol',
      limits: { perWithdrawalCap: 250n },
    });
    const hidden = applied(behind, {
      type: 'accountLimitsSet',
      account: 'carol',
      limits: { perWithdrawalCap: 900n },
    });
    expect(loosenings(behind, hidden)).toEqual([
      {
        kind: 'cap',
        account: 'carol',
        field: 'perWithdrawalCap',
        before: 250n,
        after: 900n,
        view: 'configured',
      },
    ]);
  });

  test('chain events never loosen, even those that free window room', () => {
    const s = run(base(), {
      type: 'withdrawalRequested',
      id: 'w1',
      account: 'alice',
      amount: 90n,
      height: 100,
    });
    expect(
      loosens(
        s,
        applied(
          s,
          { type: 'withdrawalRejected', id: 'w1' },
          { type: 'chainReorganized', height: 99 },
          { type: 'peggedTotalObserved', total: 0n },
        ),
      ),
    ).toBe(false);
  });
});

// --- properties --------------------------------------------------------------------------

function capsOf(s: LimitsState): Caps {
  return s.limits;
}

/** A state and its model after a random history, most of whose events apply. */
const historyArb = fc.array(stepArb(HISTORY), { maxLength: 40 }).map((steps: Step[]) => {
  const model = new NaiveModel(HISTORY, PROFILE, NaiveModel.caps({}));
  let state = createLimitsState({ historyBlocks: HISTORY, throttleProfile: PROFILE });
  for (const step of [{ kind: 'block', gap: 0 } as Step, ...steps]) {
    const event = toEvent(step, model);
    const backup = model.clone();
    const r = applyAll(state, [event]);
    if (model.apply(event as unknown as Record<string, unknown>) !== undefined) {
      Object.assign(model, backup);
      continue;
    }
    if (r.ok) state = r.state;
  }
  return { state, model };
});

const batchArb = fc.array(
  fc.oneof(
    { weight: 8, arbitrary: changeStepArb(HISTORY) },
    {
      weight: 1,
      arbitrary: fc.constant<Step>({ kind: 'throttle', initiator: 'ops-2' }),
    },
  ),
  { minLength: 1, maxLength: 3 },
);

const FIELDS = [
  'pegCap',
  'perDepositCap',
  'perDepositMinimum',
  'perWithdrawalCap',
  'rollingWithdrawalBlocks',
  'rollingWithdrawalCap',
  'rollingWithdrawalCapShare',
  'rollingMintBlocks',
  'rollingMintCap',
  'rollingMintCapShare',
] as const;

/** One field of the global caps or of an entry moved up, down, removed or set: a small step. */
interface Nudge {
  readonly account: string | undefined;
  readonly field: (typeof FIELDS)[number];
  readonly op: 'up' | 'down' | 'remove' | 'set';
}

const nudgeArb: fc.Arbitrary<Nudge> = fc.record({
  account: fc.constantFrom(undefined, 'alice', 'bob'),
  field: fc.constantFrom(...FIELDS),
  op: fc.constantFrom('up' as const, 'down' as const, 'remove' as const, 'set' as const),
});

function nudged(model: NaiveModel, n: Nudge): LimitsEvent {
  const caps: Record<string, bigint | null> = {
    ...(n.account === undefined
      ? model.global
      : (model.entries.get(n.account) ?? NaiveModel.caps({}))),
  };
  const v = caps[n.field] ?? null;
  const next =
    n.op === 'remove'
      ? null
      : n.op === 'set' || v === null
        ? 3n
        : n.op === 'up'
          ? v + 1n
          : v > 1n
            ? v - 1n
            : 1n;
  caps[n.field] = next;
  // A window is set or removed whole (its share with it when removed).
  for (const [blocks, cap, share] of [
    ['rollingWithdrawalBlocks', 'rollingWithdrawalCap', 'rollingWithdrawalCapShare'],
    ['rollingMintBlocks', 'rollingMintCap', 'rollingMintCapShare'],
  ] as const) {
    if (n.field !== blocks && n.field !== cap) continue;
    const other = n.field === blocks ? cap : blocks;
    if (next === null) {
      caps[other] = null;
      caps[share] = null;
    } else caps[other] ??= 3n;
  }
  return n.account === undefined
    ? { type: 'limitsSet', limits: caps }
    : { type: 'accountLimitsSet', account: n.account, limits: caps };
}

describe('the loosening rule against a naive comparison', () => {
  test.prop([historyArb, fc.array(nudgeArb, { minLength: 1, maxLength: 2 }), fc.boolean()], {
    numRuns: 600,
  })(
    'loosens agrees with the naive comparison on batches that move one or two fields',
    (history, nudges, braked) => {
      let { state, model } = history;
      if (braked) {
        // Under throttle mode, where the configured caps hide behind the overlay.
        model = model.clone();
        model.apply({ type: 'throttleStarted', initiator: 'ops-1' });
        state = run(state, { type: 'throttleStarted', initiator: 'ops-1' });
      }
      const events: LimitsEvent[] = [];
      const m = model.clone();
      for (const n of nudges) {
        const e = nudged(m, n);
        events.push(e);
        // A limitsSet would end throttle mode: nudge the entries only, then.
        if (braked && e.type === 'limitsSet') return;
        if (m.apply(e as unknown as Record<string, unknown>) !== undefined) return;
      }
      const r = applyAll(state, events);
      if (!r.ok) throw r.error;
      expect(loosens(state, r.state)).toBe(naiveLoosens(model, m));
    },
  );

  test.prop([historyArb, batchArb], { numRuns: 400 })(
    'loosens agrees with comparing every field of every account in both views',
    ({ state, model }, steps) => {
      const events = (steps as Array<ChangeStep | Step>).map((s) => toEvent(s as Step, model));
      const r = applyAll(state, events);
      const naive = model.tryBatch(events as unknown as Array<Record<string, unknown>>);
      expect(r.ok ? 'ok' : r.error.code).toBe(typeof naive === 'string' ? naive : 'ok');
      if (!r.ok || typeof naive === 'string') return;
      expect(loosens(state, r.state)).toBe(naiveLoosens(model, naive));
    },
  );

  // Each field, set in a way that loosens it, beside another field set in a way that
  // tightens it: the tightening never hides the loosening.
  const LOOSER: Record<keyof Caps, bigint | null> = {
    pegCap: 6000n,
    perDepositCap: 900n,
    perDepositMinimum: 1n,
    perWithdrawalCap: 301n,
    rollingWithdrawalBlocks: 2n,
    rollingWithdrawalCap: 1001n,
    rollingWithdrawalCapShare: 6000n,
    rollingMintBlocks: 2n,
    rollingMintCap: 1001n,
    rollingMintCapShare: 6000n,
  };
  const TIGHTER: Record<keyof Caps, bigint> = {
    pegCap: 10n,
    perDepositCap: 20n,
    perDepositMinimum: 15n,
    perWithdrawalCap: 5n,
    rollingWithdrawalBlocks: 9n,
    rollingWithdrawalCap: 3n,
    rollingWithdrawalCapShare: 4000n,
    rollingMintBlocks: 9n,
    rollingMintCap: 3n,
    rollingMintCapShare: 4000n,
  };
  const fieldArb = fc.constantFrom(...(Object.keys(LOOSER) as Array<keyof Caps>));

  test.prop([fieldArb, fieldArb, fc.boolean(), fc.boolean()], { numRuns: 200 })(
    'a batch that loosens one thing and tightens another loosens',
    (loose, tight, looseOnEntry, tightFirst) => {
      // The window caps are shares of the total too (5,000 basis points), so that a share
      // may be raised (loosens) or lowered (tightens) like any cap.
      const s = run(base(), {
        type: 'limitsUpdated',
        limits: {
          rollingWithdrawalCapShare: 5000n,
          rollingMintBlocks: 4n,
          rollingMintCap: 1000n,
          rollingMintCapShare: 5000n,
        },
      });
      const global = { ...s.limits };
      const entry: Record<string, bigint | null> = {
        perWithdrawalCap: 100n,
        pegCap: 700n,
        perDepositMinimum: 10n,
        perDepositCap: 500n,
        rollingWithdrawalBlocks: 4n,
        rollingWithdrawalCap: 1000n,
        rollingWithdrawalCapShare: 5000n,
        rollingMintBlocks: 4n,
        rollingMintCap: 1000n,
        rollingMintCapShare: 5000n,
      };
      const start = run(s, { type: 'accountLimitsSet', account: 'alice', limits: entry });
      const g: Record<string, bigint | null> = { ...global };
      const e: Record<string, bigint | null> = { ...entry };
      // One loosened where the other is tightened: on alice's entry and globally.
      (looseOnEntry ? e : g)[loose] = LOOSER[loose];
      (looseOnEntry ? g : e)[tight] = TIGHTER[tight];
      for (const c of [g, e]) {
        const cap = c.perDepositCap ?? null;
        if (cap !== null && c.perDepositMinimum! > cap) c.perDepositMinimum = cap;
      }
      const events: LimitsEvent[] = [
        { type: 'limitsSet', limits: g },
        { type: 'accountLimitsSet', account: 'alice', limits: e },
      ];
      const r = applyAll(start, tightFirst ? events.reverse() : events);
      if (!r.ok) throw r.error;
      expect(loosens(start, r.state)).toBe(true);
      expect(
        loosenings(start, r.state).some(
          (l) =>
            l.kind === 'cap' &&
            (l.field === loose || l.field === `account${loose[0]!.toUpperCase()}${loose.slice(1)}`),
        ),
      ).toBe(true);
    },
  );
});
