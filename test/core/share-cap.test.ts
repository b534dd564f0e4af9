/**
 * A window cap that follows the supply (`rollingWithdrawalCapShare`): basis points of the
 * pegged total beside the fixed cap. The cap in force is the lower of the two (the share
 * rounded down), then throttle mode's; it only tightens, moves with the total, and is
 * governed like every cap.
 */
import { describe, expect, test } from 'vitest';
import {
  applyAll,
  checkWithdrawal,
  createLimitsState,
  effectiveLimits,
  getAccountLimits,
  getLimits,
  type LimitsState,
  loosenings,
  loosens,
  snapshotOf,
  stateFromSnapshot,
  whenAvailable,
  windowOf,
} from '../../src/index.js';
import { run } from '../support/helpers.js';
import { asVersion } from '../support/old-snapshots.js';

// A 10-block window with a fixed cap of 150, and 10% (1,000 basis points) of the total.
function base(total: bigint): LimitsState {
  return run(
    createLimitsState({
      limits: {
        rollingWithdrawalBlocks: 10n,
        rollingWithdrawalCap: 150n,
        rollingWithdrawalCapShare: 1_000n,
      },
    }),
    { type: 'blockConnected', height: 100 },
    { type: 'peggedTotalObserved', total },
  );
}

describe('the cap in force', () => {
  test('is the share of the total when that is the lower', () => {
    const s = base(1_000n);
    expect(getLimits(s).rollingWithdrawalCap).toBe(100n);
    expect(getLimits(s).availableToWithdraw).toBe(100n);
  });

  test('is the fixed cap when that is the lower', () => {
    expect(getLimits(base(1_000_000n)).rollingWithdrawalCap).toBe(150n);
  });

  test('rounds the share down: it fails closed', () => {
    // 10% of 1,009 is 100.9.
    expect(getLimits(base(1_009n)).rollingWithdrawalCap).toBe(100n);
  });

  test('with no total known (0), nothing may be withdrawn', () => {
    const s = run(
      createLimitsState({
        limits: {
          rollingWithdrawalBlocks: 10n,
          rollingWithdrawalCap: 150n,
          rollingWithdrawalCapShare: 1_000n,
        },
      }),
      { type: 'blockConnected', height: 100 },
    );
    expect(getLimits(s).rollingWithdrawalCap).toBe(0n);
    expect(checkWithdrawal(s, { account: 'a', amount: 1n })).toMatchObject({
      ok: false,
      reason: 'rolling_cap_exceeded',
      limit: 0n,
      availableAt: null,
    });
    expect(whenAvailable(s, { account: 'a', amount: 1n })).toBeNull();
  });

  test('moves with the total: a lower total makes a withdrawal wait longer, or never pass at that total', () => {
    const s = run(base(1_000n), {
      type: 'withdrawalRequested',
      id: 'w1',
      account: 'a',
      amount: 60n,
      height: 100,
    });
    // At a total of 1,000 (cap 100), 30 more fit now.
    expect(checkWithdrawal(s, { account: 'b', amount: 30n })).toEqual({ ok: true });
    // At 800 (cap 80), 30 wait until the 60 leave the window.
    const lower = run(s, { type: 'peggedTotalObserved', total: 800n });
    expect(checkWithdrawal(lower, { account: 'b', amount: 30n })).toMatchObject({
      ok: false,
      reason: 'rolling_cap_exceeded',
      limit: 20n,
      availableAt: 110,
    });
    // At 200 (cap 20), 30 never pass.
    const low = run(s, { type: 'peggedTotalObserved', total: 200n });
    expect(whenAvailable(low, { account: 'b', amount: 30n })).toBeNull();
    // The total rising again gives the room back once the lower total has left the window
    // (a rise is not believed at once: a forged mint would raise the cap with it).
    const back = run(low, { type: 'peggedTotalObserved', total: 1_000n });
    expect(checkWithdrawal(back, { account: 'b', amount: 30n })).toMatchObject({
      ok: false,
      reason: 'rolling_cap_exceeded',
      availableAt: 110,
    });
    const later = run(back, { type: 'blockConnected', height: 110 });
    expect(checkWithdrawal(later, { account: 'b', amount: 30n })).toEqual({ ok: true });
  });

  test("throttle mode's cap applies on top, the lower of the three", () => {
    const s = run(
      createLimitsState({
        throttleProfile: {
          perWithdrawalCap: 1_000n,
          rollingWithdrawalBlocks: 10n,
          rollingWithdrawalCap: 50n,
        },
        limits: {
          rollingWithdrawalBlocks: 10n,
          rollingWithdrawalCap: 150n,
          rollingWithdrawalCapShare: 1_000n,
        },
      }),
      { type: 'blockConnected', height: 100 },
      { type: 'peggedTotalObserved', total: 1_000n },
      { type: 'throttleStarted', initiator: 'brake' },
    );
    expect(getLimits(s).rollingWithdrawalCap).toBe(50n);
    expect(windowOf(s)).toMatchObject({
      rollingWithdrawalCap: 50n,
      rollingWithdrawalCapFixed: 50n,
      rollingWithdrawalCapShare: 1_000n,
      peggedTotal: 1_000n,
    });
  });

  test('/window and effectiveLimits show the fixed cap, the share and the total behind it', () => {
    const s = base(1_000n);
    expect(windowOf(s)).toMatchObject({
      rollingWithdrawalCap: 100n,
      rollingWithdrawalCapFixed: 150n,
      rollingWithdrawalCapShare: 1_000n,
      peggedTotal: 1_000n,
    });
    expect(effectiveLimits(s, 'x')).toMatchObject({
      rollingWithdrawalCap: 100n,
      rollingWithdrawalCapFixed: 150n,
      rollingWithdrawalCapShare: 1_000n,
    });
  });

  test('GET /limits reports one number, the cap in force, and no field of its own for the share', () => {
    expect(Object.keys(getLimits(base(1_000n)))).not.toContain('rollingWithdrawalCapShare');
  });
});

describe("an account entry's share", () => {
  // alice's own window: 20 blocks, a fixed 500, half of her own total.
  const withAlice = (aliceTotal: bigint) =>
    run(
      base(1_000_000n),
      {
        type: 'accountLimitsSet',
        account: 'alice',
        limits: {
          rollingWithdrawalBlocks: 20n,
          rollingWithdrawalCap: 500n,
          rollingWithdrawalCapShare: 5_000n,
        },
      },
      { type: 'peggedTotalObserved', account: 'alice', total: aliceTotal },
    );

  test("is of the account's own pegged total", () => {
    const s = withAlice(300n);
    expect(getAccountLimits(s, 'alice')?.rollingWithdrawalCap).toBe(150n);
    expect(getLimits(s).accountCaps.alice?.rollingWithdrawalCap).toBe(150n);
    expect(windowOf(s, 'alice')).toMatchObject({
      rollingWithdrawalCap: 150n,
      rollingWithdrawalCapFixed: 500n,
      rollingWithdrawalCapShare: 5_000n,
      peggedTotal: 300n,
    });
    expect(effectiveLimits(s, 'alice')).toMatchObject({
      accountRollingWithdrawalCap: 150n,
      accountRollingWithdrawalCapFixed: 500n,
      accountRollingWithdrawalCapShare: 5_000n,
    });
    // At 200 of her own, her cap is 100, under the global 150: hers refuses.
    expect(checkWithdrawal(withAlice(200n), { account: 'alice', amount: 101n })).toMatchObject({
      reason: 'account_rolling_cap_exceeded',
      limit: 100n,
    });
  });

  test('an account with no total observed may withdraw nothing through its own window', () => {
    expect(checkWithdrawal(withAlice(0n), { account: 'alice', amount: 1n })).toMatchObject({
      ok: false,
      reason: 'account_rolling_cap_exceeded',
    });
  });
});

describe('setting a share', () => {
  const start = () => base(1_000n);

  test.each([
    [0n, 'invalid_share'],
    [10_001n, 'invalid_share'],
    [-1n, 'invalid_amount'],
  ])('a share of %s is refused (%s), and the state stays as it was', (share, code) => {
    const s = start();
    const r = applyAll(s, [
      { type: 'limitsUpdated', limits: { rollingWithdrawalCapShare: share } },
    ]);
    expect(r).toMatchObject({
      ok: false,
      error: { code, path: '[0].limits.rollingWithdrawalCapShare' },
    });
  });

  test('a share without a window to apply to is refused', () => {
    const r = applyAll(createLimitsState(), [
      { type: 'limitsSet', limits: { rollingWithdrawalCapShare: 100n } },
    ]);
    expect(r).toMatchObject({
      ok: false,
      error: { code: 'incomplete_rolling_window', path: '[0].limits.rollingWithdrawalCapShare' },
    });
  });

  test('limitsSet, limitsUpdated and accountLimitsSet each set it', () => {
    const s = start();
    const set = run(s, {
      type: 'limitsSet',
      limits: {
        rollingWithdrawalBlocks: 10n,
        rollingWithdrawalCap: 150n,
        rollingWithdrawalCapShare: 500n,
      },
    });
    expect(getLimits(set).rollingWithdrawalCap).toBe(50n);
    const updated = run(s, { type: 'limitsUpdated', limits: { rollingWithdrawalCapShare: 200n } });
    expect(getLimits(updated).rollingWithdrawalCap).toBe(20n);
    const entry = run(s, {
      type: 'accountLimitsSet',
      account: 'bob',
      limits: {
        rollingWithdrawalBlocks: 5n,
        rollingWithdrawalCap: 9n,
        rollingWithdrawalCapShare: 1n,
      },
    });
    expect(windowOf(entry, 'bob')?.rollingWithdrawalCapShare).toBe(1n);
  });

  test('setting or lowering a share tightens', () => {
    const s = start();
    expect(
      loosens(s, run(s, { type: 'limitsUpdated', limits: { rollingWithdrawalCapShare: 999n } })),
    ).toBe(false);
    const none = run(s, { type: 'limitsUpdated', limits: { rollingWithdrawalCapShare: null } });
    expect(loosens(none, s)).toBe(false);
  });

  test('raising or removing a share loosens, and loosenings names it with before and after', () => {
    const s = start();
    const raised = run(s, { type: 'limitsUpdated', limits: { rollingWithdrawalCapShare: 2_000n } });
    expect(loosenings(s, raised)).toEqual([
      {
        kind: 'cap',
        account: null,
        field: 'rollingWithdrawalCapShare',
        before: 1_000n,
        after: 2_000n,
        view: 'effective',
      },
    ]);
    const removed = run(s, { type: 'limitsUpdated', limits: { rollingWithdrawalCapShare: null } });
    expect(loosenings(s, removed)).toEqual([
      expect.objectContaining({ field: 'rollingWithdrawalCapShare', before: 1_000n, after: null }),
    ]);
  });

  test('a higher total is no loosening of the limits: chain traffic moves the cap in force', () => {
    const s = start();
    expect(loosens(s, run(s, { type: 'peggedTotalObserved', total: 5_000n }))).toBe(false);
  });
});

describe('a share in a snapshot', () => {
  test('a snapshot keeps it, and the restored state answers alike', () => {
    const s = run(base(1_000n), {
      type: 'accountLimitsSet',
      account: 'alice',
      limits: {
        rollingWithdrawalBlocks: 5n,
        rollingWithdrawalCap: 9n,
        rollingWithdrawalCapShare: 7n,
      },
    });
    const snap = snapshotOf(s);
    expect(snap.version).toBe(7);
    expect(snap.limits.rollingWithdrawalCapShare).toBe('1000');
    expect(snap.accountCaps.alice?.rollingWithdrawalCapShare).toBe('7');
    const r = stateFromSnapshot(JSON.parse(JSON.stringify(snap)));
    if (!r.ok) throw r.error;
    expect(getLimits(r.state)).toEqual(getLimits(s));
    expect(windowOf(r.state, 'alice')).toEqual(windowOf(s, 'alice'));
  });

  test('a version 4 snapshot (before shares) loads without one', () => {
    const r = stateFromSnapshot(asVersion(snapshotOf(base(1_000n)), 4));
    if (!r.ok) throw r.error;
    expect(windowOf(r.state)?.rollingWithdrawalCapShare).toBeNull();
    expect(getLimits(r.state).rollingWithdrawalCap).toBe(150n);
  });

  test('a share in a version 4 snapshot is an unknown field there', () => {
    const v4 = asVersion(snapshotOf(base(1_000n)), 4);
    const r = stateFromSnapshot({
      ...v4,
      limits: { ...(v4.limits as object), rollingWithdrawalCapShare: '1000' },
    });
    expect(r).toMatchObject({
      ok: false,
      error: { code: 'invalid_snapshot', path: 'limits.rollingWithdrawalCapShare' },
    });
  });
});
