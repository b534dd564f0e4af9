// The peg's backing (src/core/integrity.ts, src/core/pegged-totals.ts): the reserves, the
// check, the breaker that latches, failing closed everywhere, and the share's lagged basis.
import { describe, expect, test } from 'vitest';
import {
  admitDeposits,
  admitWithdrawals,
  apply,
  checkDeposit,
  checkWithdrawal,
  createLimitsState,
  decideBatch,
  effectiveLimits,
  encodeJson,
  getAccountLimits,
  getLimits,
  type LimitsEvent,
  type LimitsState,
  loosenings,
  pegIntegrity,
  scopeOf,
  snapshotOf,
  stateFromSnapshot,
  whenAvailable,
  windowOf,
} from '../../src/index.js';
import { at, expectError, run } from '../support/helpers.js';
import { asVersion } from '../support/old-snapshots.js';

const CAPS = {
  perDepositCap: 5_000n,
  perWithdrawalCap: 1_000n,
  rollingWithdrawalBlocks: 10n,
  rollingWithdrawalCap: 3_000n,
  accountCaps: { alice: { perWithdrawalCap: 500n }, bob: { pegCap: 9_000n } },
};

// A bridge at tip 100: 10,000 minted, 10,000 held, up to 100 unbacked allowed.
function backed(): LimitsState {
  return run(
    at(100, CAPS),
    { type: 'peggedTotalObserved', total: 10_000n },
    { type: 'reservesObserved', total: 10_000n, height: 100 },
    { type: 'pegIntegritySet', maxUnbacked: 100n, reservesMaxAge: 3 },
  );
}

const forged: LimitsEvent = { type: 'peggedTotalObserved', total: 12_000n };

describe('the events', () => {
  test('reservesMaxAge is a number of blocks: a bigint is refused, the state unchanged', () => {
    const s = backed();
    const r = apply(s, { type: 'pegIntegritySet', maxUnbacked: 100n, reservesMaxAge: 6n } as never);
    expect(r.ok).toBe(false);
    if (!r.ok) expect([r.error.code, r.error.path]).toEqual(['invalid_amount', 'reservesMaxAge']);
    expect(pegIntegrity(s).reservesMaxAge).toBe(3);
  });

  test('bad input gets a specific error with its path, and the state stays as it was', () => {
    const s = backed();
    expectError(
      s,
      { type: 'reservesObserved', total: -1n, height: 100 },
      'invalid_amount',
      'total',
    );
    expectError(s, { type: 'reservesObserved', total: 1n, height: -1 }, 'invalid_height', 'height');
    expectError(
      s,
      { type: 'pegIntegritySet', maxUnbacked: 1n, reservesMaxAge: 0 },
      'invalid_amount',
      'reservesMaxAge',
    );
    expectError(
      s,
      { type: 'pegIntegritySet', maxUnbacked: -5n, reservesMaxAge: 3 },
      'invalid_amount',
      'maxUnbacked',
    );
    expectError(
      s,
      { type: 'pegIntegritySet', reservesMaxAge: 3 } as unknown as LimitsEvent,
      'invalid_event',
      'maxUnbacked',
    );
  });

  test('the scopes: reserves are chain traffic, the check and its clearing the limits scope', () => {
    expect(scopeOf('reservesObserved')).toBe('chain');
    expect(scopeOf('pegIntegritySet')).toBe('limits');
    expect(scopeOf('pegBreakerCleared')).toBe('limits');
  });

  test('the check is off until set: the reserves are shown, nothing fails closed', () => {
    const s = run(at(100, CAPS), { type: 'peggedTotalObserved', total: 10_000n }, forged);
    expect(pegIntegrity(s)).toEqual({
      state: 'off',
      peggedTotal: 12_000n,
      reserves: null,
      reservesHeight: null,
      unbacked: null,
      maxUnbacked: null,
      reservesMaxAge: 6,
      tripped: null,
    });
    expect(checkWithdrawal(s, { account: 'carol', amount: 10n })).toEqual({ ok: true });
  });
});

describe('the breaker latches', () => {
  test('it trips the first time more than maxUnbacked is unbacked, at the tip and figures then', () => {
    const s = backed();
    expect(pegIntegrity(s)).toMatchObject({ state: 'backed', unbacked: 0n, tripped: null });
    // Within the tolerance: still backed.
    const within = run(s, { type: 'peggedTotalObserved', total: 10_100n });
    expect(pegIntegrity(within).state).toBe('backed');
    const tripped = run(within, forged);
    expect(pegIntegrity(tripped)).toMatchObject({
      state: 'tripped',
      unbacked: 2_000n,
      tripped: { height: 100, peggedTotal: 12_000n, reserves: 10_000n, unbacked: 2_000n },
    });
  });

  test('reserves that recover, and a total that falls back, do not reopen it', () => {
    const s = run(
      backed(),
      forged,
      { type: 'blockConnected', height: 101 },
      { type: 'reservesObserved', total: 20_000n, height: 101 },
      { type: 'peggedTotalObserved', total: 10_000n },
    );
    expect(pegIntegrity(s)).toMatchObject({ state: 'tripped', unbacked: 0n });
    expect(checkWithdrawal(s, { account: 'carol', amount: 1n })).toMatchObject({
      reason: 'peg_unbacked',
    });
    // Only an operator's clear does.
    const cleared = run(s, { type: 'pegBreakerCleared' });
    expect(pegIntegrity(cleared)).toMatchObject({ state: 'backed', tripped: null });
    expect(checkWithdrawal(cleared, { account: 'carol', amount: 1n })).toEqual({ ok: true });
  });

  test('a clear while the peg is still unbacked trips it again at once', () => {
    const s = run(backed(), forged, { type: 'pegBreakerCleared' });
    expect(pegIntegrity(s).state).toBe('tripped');
  });

  test('turning the check off clears it (a loosening), and turning it back on trips it again if unbacked', () => {
    const tripped = run(backed(), forged);
    const off = run(tripped, { type: 'pegIntegritySet', maxUnbacked: null, reservesMaxAge: 3 });
    expect(pegIntegrity(off)).toMatchObject({ state: 'off', tripped: null });
    const on = run(off, { type: 'pegIntegritySet', maxUnbacked: 100n, reservesMaxAge: 3 });
    expect(pegIntegrity(on).state).toBe('tripped');
  });

  test('a batch trips it at its first unbacked event, even when a later one of the batch would back the peg', () => {
    const r = apply(backed(), forged);
    expect(r.ok).toBe(true);
    const s = run(backed(), forged, { type: 'reservesObserved', total: 12_000n, height: 100 });
    expect(pegIntegrity(s).state).toBe('tripped');
  });
});

describe('reserves unknown fail closed, without latching', () => {
  test('never read: reserves_unknown', () => {
    const s = run(at(100, CAPS), { type: 'pegIntegritySet', maxUnbacked: 0n, reservesMaxAge: 3 });
    expect(pegIntegrity(s)).toMatchObject({ state: 'reserves_unknown', unbacked: null });
    expect(checkDeposit(s, { account: 'carol', amount: 1n })).toEqual({
      ok: false,
      reason: 'reserves_unknown',
      limit: 0n,
      availableAt: null,
    });
  });

  test('older than reservesMaxAge blocks below the tip they are unknown, and a fresh reading opens again', () => {
    let s = run(backed(), { type: 'blockConnected', height: 103 });
    expect(pegIntegrity(s).state).toBe('backed');
    s = run(s, { type: 'blockConnected', height: 104 });
    expect(pegIntegrity(s)).toMatchObject({ state: 'reserves_unknown', unbacked: null });
    // Unknown is no trip: a forged mint meanwhile is not seen, but nothing is admitted.
    s = run(s, forged);
    expect(pegIntegrity(s).tripped).toBeNull();
    // The next reading sees it, and trips.
    s = run(s, { type: 'reservesObserved', total: 10_000n, height: 104 });
    expect(pegIntegrity(s).state).toBe('tripped');
    const fresh = run(
      backed(),
      { type: 'blockConnected', height: 104 },
      {
        type: 'reservesObserved',
        total: 10_000n,
        height: 104,
      },
    );
    expect(pegIntegrity(fresh).state).toBe('backed');
  });

  test('a reading above the tip, or before any block, is fresh', () => {
    const ahead = run(
      at(100, CAPS),
      { type: 'reservesObserved', total: 0n, height: 250 },
      {
        type: 'pegIntegritySet',
        maxUnbacked: 0n,
        reservesMaxAge: 1,
      },
    );
    expect(pegIntegrity(ahead).state).toBe('backed');
    const first = run(
      createLimitsState(),
      { type: 'pegIntegritySet', maxUnbacked: 0n, reservesMaxAge: 1 },
      { type: 'reservesObserved', total: 0n, height: 5 },
    );
    expect(pegIntegrity(first).state).toBe('backed');
  });

  test('tripped wins over reserves_unknown, as state and as reason', () => {
    const s = run(backed(), forged, { type: 'blockConnected', height: 200 });
    expect(pegIntegrity(s).state).toBe('tripped');
    expect(checkWithdrawal(s, { account: 'alice', amount: 1n })).toMatchObject({
      reason: 'peg_unbacked',
    });
  });
});

describe('failing closed everywhere', () => {
  const closed = () => run(backed(), forged);

  test('every withdrawal and deposit is refused right after the malformed-input reasons', () => {
    const s = closed();
    expect(checkWithdrawal(s, { account: 'carol', amount: 1n })).toEqual({
      ok: false,
      reason: 'peg_unbacked',
      limit: 0n,
      availableAt: null,
    });
    expect(checkWithdrawal(s, { account: 'carol', amount: 0n })).toMatchObject({
      reason: 'invalid_amount',
    });
    expect(checkWithdrawal(s, { account: '', amount: 5n })).toMatchObject({
      reason: 'invalid_account',
    });
    expect(checkDeposit(s, { account: 'carol', amount: 1n })).toMatchObject({
      reason: 'peg_unbacked',
    });
    expect(whenAvailable(s, { account: 'carol', amount: 1n })).toBeNull();
    expect(admitWithdrawals(s, [{ account: 'a', amount: 1n }]).admitted).toEqual([]);
    expect(admitDeposits(s, [{ account: 'a', amount: 1n }]).admitted).toEqual([]);
  });

  test('every view shows zero caps as an overlay: the configured values stay', () => {
    const s = closed();
    expect(getLimits(s)).toMatchObject({
      perDepositCap: 0n,
      perWithdrawalCap: 0n,
      rollingWithdrawalBlocks: 10n,
      rollingWithdrawalCap: 0n,
      availableToWithdraw: 0n,
    });
    // An entry's set caps read 0; its unset ones stay null (the zero global caps apply).
    expect(getAccountLimits(s, 'alice')).toMatchObject({
      perWithdrawalCap: 0n,
      perDepositCap: null,
      rollingWithdrawalCap: null,
    });
    expect(getAccountLimits(s, 'bob')).toMatchObject({ pegCap: 9_000n, perWithdrawalCap: null });
    expect(effectiveLimits(s, 'alice')).toMatchObject({
      perWithdrawalCap: 0n,
      availableToWithdraw: 0n,
    });
    expect(windowOf(s)).toMatchObject({
      rollingWithdrawalCap: 0n,
      rollingWithdrawalCapFixed: 3_000n,
      availableToWithdraw: 0n,
    });
    const cleared = run(
      s,
      { type: 'peggedTotalObserved', total: 10_000n },
      { type: 'pegBreakerCleared' },
    );
    expect(getLimits(cleared)).toMatchObject({
      perWithdrawalCap: 1_000n,
      rollingWithdrawalCap: 3_000n,
    });
  });

  test('with no window and no per-transfer caps set, still nothing may be withdrawn', () => {
    const s = run(at(100, {}), { type: 'pegIntegritySet', maxUnbacked: 0n, reservesMaxAge: 1 });
    expect(getLimits(s)).toMatchObject({
      perDepositCap: 0n,
      perWithdrawalCap: 0n,
      rollingWithdrawalCap: null,
      availableToWithdraw: 0n,
    });
  });
});

describe('governed: what loosens waits, what tightens does not', () => {
  const gov = { name: 'gov', scopes: ['limits'] as const };
  const waiting = { loosening: { delayBlocks: 6, quorum: 0 } };

  test('clearing, turning off and raising maxUnbacked or reservesMaxAge loosen, and the rest applies at once', () => {
    // Tripped, then backed again (the reserves recovered): clearing it opens the limits.
    const s = run(backed(), forged, { type: 'reservesObserved', total: 12_000n, height: 100 });
    for (const event of [
      { type: 'pegBreakerCleared' },
      { type: 'pegIntegritySet', maxUnbacked: null, reservesMaxAge: 3 },
    ] as LimitsEvent[])
      expect(decideBatch(s, { events: [event], operator: gov }, waiting).outcome).toBe('waiting');
    const b = backed();
    for (const event of [
      { type: 'pegIntegritySet', maxUnbacked: 500n, reservesMaxAge: 3 },
      { type: 'pegIntegritySet', maxUnbacked: 100n, reservesMaxAge: 9 },
    ] as LimitsEvent[])
      expect(decideBatch(b, { events: [event], operator: gov }, waiting).outcome).toBe('waiting');
    const lower = decideBatch(
      b,
      { events: [{ type: 'pegIntegritySet', maxUnbacked: 10n, reservesMaxAge: 2 }], operator: gov },
      waiting,
    );
    expect(lower.outcome).toBe('applied');
    // Cleared while still unbacked, it trips again at once: nothing loosened, nothing waits.
    const still = run(backed(), forged);
    expect(
      decideBatch(still, { events: [{ type: 'pegBreakerCleared' }], operator: gov }, waiting)
        .outcome,
    ).toBe('applied');
    const cleared = run(s, { type: 'pegBreakerCleared' });
    expect(loosenings(s, cleared)).toEqual([
      {
        kind: 'breakerCleared',
        tripped: { height: 100, peggedTotal: 12_000n, reserves: 10_000n, unbacked: 2_000n },
      },
    ]);
  });

  test('a feeder (chain scope) can report reserves but never clear the breaker', () => {
    const feeder = { name: 'feeder', scopes: ['chain'] as const };
    const s = run(backed(), forged);
    const r = decideBatch(s, { events: [{ type: 'pegBreakerCleared' }], operator: feeder });
    expect(r).toMatchObject({
      outcome: 'refused',
      by: 'operator',
      error: { code: 'scope_denied' },
    });
  });
});

describe('a share an attack cannot raise: the lagged basis', () => {
  // A window of 10 blocks whose cap is 10% of the pegged total.
  function shared(): LimitsState {
    return run(
      at(100, {
        rollingWithdrawalBlocks: 10n,
        rollingWithdrawalCap: 1_000_000n,
        rollingWithdrawalCapShare: 1_000n,
      }),
      { type: 'peggedTotalObserved', total: 1_000n },
    );
  }

  test('a fall counts at once', () => {
    const s = run(
      shared(),
      { type: 'blockConnected', height: 101 },
      {
        type: 'peggedTotalObserved',
        total: 500n,
      },
    );
    expect(getLimits(s).rollingWithdrawalCap).toBe(50n);
  });

  test('a rise counts once the lower totals have left the window', () => {
    let s = run(
      shared(),
      { type: 'blockConnected', height: 101 },
      {
        type: 'peggedTotalObserved',
        total: 100_000n,
      },
    );
    expect(getLimits(s).rollingWithdrawalCap).toBe(100n);
    expect(windowOf(s)).toMatchObject({ peggedTotal: 100_000n, shareBasis: 1_000n });
    // The total of 1,000 was in force when block 101 came: it leaves the window at 111.
    s = run(s, { type: 'blockConnected', height: 110 });
    expect(getLimits(s).rollingWithdrawalCap).toBe(100n);
    s = run(s, { type: 'blockConnected', height: 111 });
    expect(getLimits(s).rollingWithdrawalCap).toBe(10_000n);
  });

  test('whenAvailable and availableAt count the basis rising as the lower totals leave', () => {
    const s = run(
      shared(),
      { type: 'blockConnected', height: 101 },
      {
        type: 'peggedTotalObserved',
        total: 100_000n,
      },
    );
    expect(whenAvailable(s, { account: 'a', amount: 5_000n })).toBe(111);
    expect(checkWithdrawal(s, { account: 'a', amount: 5_000n })).toMatchObject({
      reason: 'rolling_cap_exceeded',
      availableAt: 111,
    });
  });

  test('a reorganization forgets no observation', () => {
    const s = run(
      shared(),
      { type: 'blockConnected', height: 105 },
      { type: 'peggedTotalObserved', total: 100n },
      { type: 'peggedTotalObserved', total: 5_000n },
      { type: 'chainReorganized', height: 102 },
    );
    expect(getLimits(s).rollingWithdrawalCap).toBe(10n);
  });

  test('a total equal to the last one is recorded too: a reorganization below it cannot let a mint raise its own cap', () => {
    // Block 100, total 1,000; block 120, the same total again; reorganized to 110, where a
    // mint of 999,000 is observed; at 125 the window (116…125) holds the 1,000 seen at 120.
    const s = run(
      at(100, {
        rollingWithdrawalBlocks: 10n,
        rollingWithdrawalCap: 1_000_000_000_000n,
        rollingWithdrawalCapShare: 10_000n,
      }),
      { type: 'peggedTotalObserved', total: 1_000n },
      { type: 'blockConnected', height: 120 },
      { type: 'peggedTotalObserved', total: 1_000n },
      { type: 'chainReorganized', height: 110 },
      { type: 'peggedTotalObserved', total: 1_000_000n },
      { type: 'blockConnected', height: 125 },
    );
    expect(windowOf(s)).toMatchObject({ peggedTotal: 1_000_000n, shareBasis: 1_000n });
    expect(getLimits(s).rollingWithdrawalCap).toBe(1_000n);
    expect(checkWithdrawal(s, { account: 'a', amount: 5_000n })).toMatchObject({
      ok: false,
      reason: 'rolling_cap_exceeded',
      limit: 1_000n,
      availableAt: 130,
    });
  });

  test('the same total observed twice at one tip is one observation: the state is the same object', () => {
    const s = run(shared(), { type: 'blockConnected', height: 101 });
    const once = run(s, { type: 'peggedTotalObserved', total: 2_000n });
    expect(run(once, { type: 'peggedTotalObserved', total: 2_000n })).toBe(once);
  });

  test('whenAvailable is exact at the highest safe heights: a withdrawal that fits now is available now', () => {
    const top = Number.MAX_SAFE_INTEGER;
    const s = run(
      createLimitsState({
        limits: {
          rollingWithdrawalBlocks: 12n,
          rollingWithdrawalCap: 1_000_000_000n,
          rollingWithdrawalCapShare: 1n,
        },
      }),
      { type: 'blockConnected', height: top },
      { type: 'peggedTotalObserved', total: 92_069_104n },
    );
    expect(checkWithdrawal(s, { account: 'a', amount: 1n })).toEqual({ ok: true });
    expect(whenAvailable(s, { account: 'a', amount: 1n })).toBe(top);
    // Past the cap in force it never fits at a safe height.
    expect(whenAvailable(s, { account: 'a', amount: 10_000n })).toBeNull();
  });

  test("an entry's share follows the account's own totals, lagged the same way", () => {
    let s = run(
      at(100, {
        accountCaps: {
          alice: {
            rollingWithdrawalBlocks: 5n,
            rollingWithdrawalCap: 1_000n,
            rollingWithdrawalCapShare: 5_000n,
          },
        },
      }),
      { type: 'peggedTotalObserved', account: 'alice', total: 200n },
      { type: 'blockConnected', height: 101 },
      { type: 'peggedTotalObserved', account: 'alice', total: 1_000n },
    );
    expect(getAccountLimits(s, 'alice')?.rollingWithdrawalCap).toBe(100n);
    s = run(s, { type: 'blockConnected', height: 106 });
    expect(getAccountLimits(s, 'alice')?.rollingWithdrawalCap).toBe(500n);
  });
});

describe('snapshots', () => {
  test('a snapshot keeps the reserves, the check, the breaker and the totals observed', () => {
    const s = run(backed(), { type: 'blockConnected', height: 101 }, forged);
    const snap = snapshotOf(s);
    expect(snap).toMatchObject({
      version: 7,
      reserves: { total: '10000', height: 100 },
      pegIntegrity: { maxUnbacked: '100', reservesMaxAge: 3 },
      pegBreaker: { height: 101, peggedTotal: '12000', reserves: '10000', unbacked: '2000' },
      totalsObserved: [
        { tip: 100, total: '10000' },
        { tip: 101, total: '12000' },
      ],
    });
    const r = stateFromSnapshot(JSON.parse(JSON.stringify(snap)));
    if (!r.ok) throw r.error;
    expect(encodeJson(snapshotOf(r.state))).toBe(encodeJson(snap));
    expect(pegIntegrity(r.state)).toEqual(pegIntegrity(s));
    expect(getLimits(r.state)).toEqual(getLimits(s));
  });

  test('a version 5 snapshot loads with the check off and its total as the only observation', () => {
    const s = run(at(100, CAPS), { type: 'peggedTotalObserved', total: 10_000n });
    const r = stateFromSnapshot(JSON.parse(JSON.stringify(asVersion(snapshotOf(s), 5))));
    if (!r.ok) throw r.error;
    expect(pegIntegrity(r.state)).toMatchObject({ state: 'off', reserves: null });
    expect(snapshotOf(r.state).totalsObserved).toEqual([{ tip: 100, total: '10000' }]);
  });

  test('an inconsistent backing is refused with its path: a trip with the check off, an unbacked peg never tripped', () => {
    const snap = JSON.parse(JSON.stringify(snapshotOf(run(backed(), forged))));
    const off = structuredClone(snap);
    off.pegIntegrity.maxUnbacked = null;
    expect(stateFromSnapshot(off)).toMatchObject({
      ok: false,
      error: { code: 'invalid_snapshot', path: 'pegBreaker' },
    });
    const untripped = structuredClone(snap);
    untripped.pegBreaker = null;
    expect(stateFromSnapshot(untripped)).toMatchObject({
      ok: false,
      error: { code: 'invalid_snapshot', path: 'pegBreaker' },
    });
    const lastTotal = structuredClone(snap);
    lastTotal.totalsObserved.pop();
    expect(stateFromSnapshot(lastTotal)).toMatchObject({
      ok: false,
      error: { path: 'totalsObserved' },
    });
  });
});
