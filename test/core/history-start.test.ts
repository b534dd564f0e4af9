/**
 * A history that starts late (`historyCompleteFrom`): a feed that begins mid-chain knows
 * nothing of the withdrawals before it, so a window reaching below that height reports no
 * room and admits nothing until it holds only heights the state was told of. Never a figure
 * above what the chain has.
 */

import { describe, expect, test } from 'vitest';
import {
  applyAll,
  checkWithdrawal,
  createLimitsState,
  decodeJson,
  effectiveLimits,
  encodeJson,
  getLimits,
  type LimitsEvent,
  type LimitsState,
  snapshotOf,
  stateFromSnapshot,
  whenAvailable,
  windowOf,
} from '../../src/index.js';
import { asVersion } from '../support/old-snapshots.js';

function run(state: LimitsState, ...events: LimitsEvent[]): LimitsState {
  const r = applyAll(state, events);
  if (!r.ok) throw r.error;
  return r.state;
}

// Window 10 blocks, cap 1000; the feed starts at height 101 (it missed what came before).
function lateStart(): LimitsState {
  return run(
    createLimitsState({
      limits: { rollingWithdrawalBlocks: 10n, rollingWithdrawalCap: 1000n, perWithdrawalCap: 900n },
    }),
    { type: 'blockConnected', height: 100 },
    { type: 'historyCompleteFrom', height: 101 },
    { type: 'blockConnected', height: 101 },
    { type: 'withdrawalRequested', id: 'w1', account: 'alice', amount: 300n, height: 101 },
  );
}

describe('a window that reaches below the complete history', () => {
  test('reports no room (null), and says from which tip it is complete', () => {
    const s = lateStart();
    expect(getLimits(s).availableToWithdraw).toBeNull();
    const w = windowOf(s);
    expect(w?.complete).toBe(false);
    expect(w?.completeAt).toBe(110);
    expect(w?.availableToWithdraw).toBeNull();
    // What is known of it is still shown.
    expect(w?.withdrawn).toBe(300n);
    expect(effectiveLimits(s, 'alice').availableToWithdraw).toBeNull();
    expect(effectiveLimits(s, 'alice').incompleteUntil).toBe(110);
  });

  test('refuses every withdrawal with window_incomplete, available at the completing tip', () => {
    const s = lateStart();
    expect(checkWithdrawal(s, { account: 'bob', amount: 1n })).toEqual({
      ok: false,
      reason: 'window_incomplete',
      limit: null,
      availableAt: 110,
    });
  });

  test('the per-withdrawal cap still refuses first', () => {
    expect(checkWithdrawal(lateStart(), { account: 'bob', amount: 901n })).toMatchObject({
      reason: 'above_per_withdrawal_cap',
    });
  });

  test('is complete once the tip reaches completeFrom + blocks − 1, and exact from there', () => {
    const at109 = run(lateStart(), { type: 'blockConnected', height: 109 });
    expect(getLimits(at109).availableToWithdraw).toBeNull();
    const at110 = run(at109, { type: 'blockConnected', height: 110 });
    expect(getLimits(at110).availableToWithdraw).toBe(700n);
    expect(windowOf(at110)).toMatchObject({ complete: true, completeAt: null });
    expect(checkWithdrawal(at110, { account: 'bob', amount: 700n })).toEqual({ ok: true });
  });

  test('whenAvailable never answers before the window becomes complete', () => {
    const s = lateStart();
    expect(whenAvailable(s, { account: 'bob', amount: 1n })).toBe(110);
    // 800 fits only once w1 (at 101) has left: the window of tip 111 starts at 102.
    expect(whenAvailable(s, { account: 'bob', amount: 800n })).toBe(111);
  });

  test("an account's own window is incomplete the same way", () => {
    const s = run(lateStart(), {
      type: 'accountLimitsSet',
      account: 'alice',
      limits: { rollingWithdrawalBlocks: 20n, rollingWithdrawalCap: 500n },
    });
    const at110 = run(s, { type: 'blockConnected', height: 110 });
    // The global window is complete at 110; alice's own (20 blocks) only at 120.
    expect(getLimits(at110).availableToWithdraw).toBe(700n);
    expect(windowOf(at110, 'alice')).toMatchObject({ complete: false, completeAt: 120 });
    expect(checkWithdrawal(at110, { account: 'alice', amount: 1n })).toMatchObject({
      reason: 'window_incomplete',
      availableAt: 120,
    });
    expect(checkWithdrawal(at110, { account: 'bob', amount: 1n })).toEqual({ ok: true });
  });

  test('throttle mode lengthening the window can make it incomplete again', () => {
    const at110 = run(lateStart(), { type: 'blockConnected', height: 110 });
    // The default profile's window is 18 blocks: complete from tip 118.
    const on = run(at110, { type: 'throttleStarted', initiator: 'ops' });
    expect(getLimits(on).availableToWithdraw).toBeNull();
    expect(checkWithdrawal(on, { account: 'bob', amount: 1n })).toMatchObject({
      reason: 'window_incomplete',
      availableAt: 118,
    });
  });

  test('a state fed from the start is complete: the default keeps every figure', () => {
    const s = run(
      createLimitsState({ limits: { rollingWithdrawalBlocks: 10n, rollingWithdrawalCap: 1000n } }),
      { type: 'blockConnected', height: 100 },
    );
    expect(getLimits(s).availableToWithdraw).toBe(1000n);
    expect(windowOf(s)).toMatchObject({ complete: true, completeAt: null });
  });

  test('an invalid height is invalid_height, and the state is unchanged', () => {
    const s = lateStart();
    const r = applyAll(s, [{ type: 'historyCompleteFrom', height: -1 }]);
    expect(r.ok).toBe(false);
    if (!r.ok) expect([r.error.code, r.error.path]).toEqual(['invalid_height', '[0].height']);
  });

  test('the height from which the history is complete is in the snapshot', () => {
    const s = lateStart();
    const snap = snapshotOf(s);
    expect(snap.historyCompleteFrom).toBe(101);
    const r = stateFromSnapshot(decodeJson(encodeJson(snap)));
    if (!r.ok) throw r.error;
    expect(windowOf(r.state)).toEqual(windowOf(s));
    expect(encodeJson(snapshotOf(r.state))).toBe(encodeJson(snap));
  });

  test('a version 2 snapshot (before a history could start late) loads as complete', () => {
    const r = stateFromSnapshot(decodeJson(encodeJson(asVersion(snapshotOf(lateStart()), 2))));
    if (!r.ok) throw r.error;
    expect(getLimits(r.state).availableToWithdraw).toBe(700n);
  });
});
