/**
 * Held blocks fail closed (`blocksHeld` / `blocksReleased`): while a feed holds blocks past
 * the chain bounds, the chain has moved on and what those blocks request is not counted, so
 * no window that applies reports room, and no check admits a withdrawal a window governs.
 */

import { describe, expect, test } from 'vitest';
import {
  applyAll,
  checkDeposit,
  checkWithdrawal,
  createLimitsState,
  decodeJson,
  effectiveLimits,
  encodeJson,
  getLimits,
  type LimitsState,
  scopeOf,
  snapshotOf,
  stateFromSnapshot,
  whenAvailable,
  windowOf,
} from '../../src/index.js';
import { run } from '../support/helpers.js';
import { asVersion } from '../support/old-snapshots.js';

// A window of 10 blocks, cap 1,000,000; alice's own window of 20 blocks, cap 400,000; 7,700
// withdrawn at 101 (992,300 left): the numbers of the case this reproduces.
function base(): LimitsState {
  return run(
    createLimitsState({
      limits: {
        rollingWithdrawalBlocks: 10n,
        rollingWithdrawalCap: 1_000_000n,
        accountCaps: { alice: { rollingWithdrawalBlocks: 20n, rollingWithdrawalCap: 400_000n } },
      },
    }),
    { type: 'blockConnected', height: 100 },
    { type: 'blockConnected', height: 101 },
    { type: 'withdrawalRequested', id: '1', account: 'bob', amount: 7_700n, height: 101 },
  );
}

const held = (s: LimitsState) => run(s, { type: 'blocksHeld', height: 900 });

describe('while blocks are held', () => {
  test('the global window reports no room, and says since which burn height', () => {
    const s = held(base());
    expect(getLimits(base()).availableToWithdraw).toBe(992_300n);
    expect(getLimits(s).availableToWithdraw).toBeNull();
    expect(windowOf(s)).toMatchObject({
      complete: false,
      completeAt: null,
      heldFrom: 900,
      availableToWithdraw: null,
      withdrawn: 7_700n,
    });
  });

  test("an account's own window reports no room either", () => {
    const s = held(base());
    expect(windowOf(s, 'alice')).toMatchObject({ complete: false, availableToWithdraw: null });
    expect(effectiveLimits(s, 'alice')).toMatchObject({ availableToWithdraw: null, heldFrom: 900 });
  });

  test("throttle mode's window reports no room either", () => {
    const keyless = run(base(), { type: 'throttleStarted', initiator: 'brake' });
    expect(getLimits(keyless).availableToWithdraw).not.toBeNull();
    expect(getLimits(held(keyless)).availableToWithdraw).toBeNull();
  });

  test('a withdrawal a window governs is refused with window_incomplete and no height', () => {
    const s = held(base());
    expect(checkWithdrawal(s, { account: 'bob', amount: 1n })).toEqual({
      ok: false,
      reason: 'window_incomplete',
      limit: null,
      availableAt: null,
    });
    expect(whenAvailable(s, { account: 'bob', amount: 1n })).toBeNull();
  });

  test('a cap refuses first, as before', () => {
    const s = held(run(base(), { type: 'limitsUpdated', limits: { perWithdrawalCap: 10n } }));
    expect(checkWithdrawal(s, { account: 'bob', amount: 11n })).toMatchObject({
      reason: 'above_per_withdrawal_cap',
    });
  });

  test('without any window, withdrawals and deposits are checked as before', () => {
    const s = run(
      createLimitsState({ limits: { perWithdrawalCap: 100n } }),
      { type: 'blockConnected', height: 5 },
      {
        type: 'blocksHeld',
        height: 500,
      },
    );
    expect(checkWithdrawal(s, { account: 'bob', amount: 100n })).toEqual({ ok: true });
    expect(checkDeposit(held(base()), { account: 'bob', amount: 5n })).toEqual({ ok: true });
  });

  test('another hold keeps the first height', () => {
    const s = run(held(base()), { type: 'blocksHeld', height: 950 });
    expect(windowOf(s)?.heldFrom).toBe(900);
  });

  test('blocksReleased gives every figure back as it was', () => {
    const released = run(held(base()), { type: 'blocksReleased' });
    expect(getLimits(released)).toEqual(getLimits(base()));
    expect(windowOf(released)).toEqual(windowOf(base()));
    expect(checkWithdrawal(released, { account: 'bob', amount: 1n })).toEqual({ ok: true });
  });

  test('blocksReleased with nothing held changes nothing: the same state', () => {
    const s = base();
    const r = applyAll(s, [{ type: 'blocksReleased' }]);
    expect(r.ok && r.state).toBe(s);
  });

  test('a height that is not one is invalid_height, and the state stays', () => {
    const s = base();
    const r = applyAll(s, [{ type: 'blocksHeld', height: -1 }]);
    expect(r).toMatchObject({ ok: false, error: { code: 'invalid_height', path: '[0].height' } });
  });

  test('holding is the feeder’s (chain), ending a hold is not (limits)', () => {
    expect(scopeOf('blocksHeld')).toBe('chain');
    expect(scopeOf('blocksReleased')).toBe('limits');
  });
});

describe('held blocks in a snapshot', () => {
  test('a snapshot keeps the hold, and the restored state answers alike', () => {
    const s = held(base());
    const snap = snapshotOf(s);
    expect(snap.blocksHeldFrom).toBe(900);
    const r = stateFromSnapshot(JSON.parse(JSON.stringify(snap)));
    if (!r.ok) throw r.error;
    expect(windowOf(r.state)).toEqual(windowOf(s));
    expect(checkWithdrawal(r.state, { account: 'bob', amount: 1n })).toEqual(
      checkWithdrawal(s, { account: 'bob', amount: 1n }),
    );
  });

  test('a version 3 snapshot (before blocks could be held) loads with none held', () => {
    const r = stateFromSnapshot(asVersion(snapshotOf(base()), 3));
    if (!r.ok) throw r.error;
    expect(windowOf(r.state)?.heldFrom).toBeNull();
    expect(getLimits(r.state).availableToWithdraw).toBe(992_300n);
  });

  test('a version 2 snapshot loads with none held', () => {
    const r = stateFromSnapshot(decodeJson(encodeJson(asVersion(snapshotOf(base()), 2))));
    if (!r.ok) throw r.error;
    expect(windowOf(r.state)?.heldFrom).toBeNull();
  });

  test('a malformed blocksHeldFrom is invalid_snapshot with its path', () => {
    const r = stateFromSnapshot({ ...snapshotOf(base()), blocksHeldFrom: 'soon' });
    expect(r).toMatchObject({
      ok: false,
      error: { code: 'invalid_snapshot', path: 'blocksHeldFrom' },
    });
  });
});
