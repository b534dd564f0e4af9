/** Small helpers for the example tests. */
import { expect } from 'vitest';
import { bookTree } from '../../src/core/books.js';
import type { Withdrawal } from '../../src/core/draft.js';
import { mapForEach, type PMap } from '../../src/core/pmap.js';
import { sumHeights } from '../../src/core/sum-tree.js';
import { forEachWithdrawal } from '../../src/core/withdrawals.js';
import {
  apply,
  applyAll,
  type CapsInput,
  createLimitsState,
  type LimitsEvent,
  type LimitsOptions,
  type LimitsState,
} from '../../src/index.js';

/** Applies events that must all succeed. */
export function run(state: LimitsState, ...events: LimitsEvent[]): LimitsState {
  const r = applyAll(state, events);
  if (!r.ok) throw r.error;
  return r.state;
}

/** A state with the given caps, at tip `tip`. */
export function at(
  tip: number,
  limits: CapsInput & LimitsOptions['limits'] = {},
  options: Omit<LimitsOptions, 'limits'> = {},
): LimitsState {
  return run(createLimitsState({ ...options, limits }), { type: 'blockConnected', height: tip });
}

/** Applies an event that must fail with `code`, and checks the state is untouched. */
export function expectError(
  state: LimitsState,
  event: LimitsEvent,
  code: string,
  path?: string,
): void {
  const before = structuredClone(state);
  const r = apply(state, event);
  expect(r.ok).toBe(false);
  if (!r.ok) {
    expect(r.error.code).toBe(code);
    if (path !== undefined) expect(r.error.path).toBe(path);
    expect(r.error.message.length).toBeGreaterThan(10);
  }
  expect(structuredClone(state)).toEqual(before);
}

let n = 0;
/** A withdrawal event with a fresh id. */
export function withdraw(
  account: string,
  amount: bigint,
  height: number,
  id = `t${n++}`,
): LimitsEvent {
  return { type: 'withdrawalRequested', id, account, amount, height };
}

export const WINDOW_144 = { rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: 1000n } as const;

/**
 * Everything observable about a state, in a canonical form independent of how its
 * persistent structures happen to be shaped: two states with equal canonical forms
 * answer every question alike.
 */
export function canonical(state: LimitsState): unknown {
  const entries = (m: PMap<unknown>) => {
    const out: Array<[string, unknown]> = [];
    mapForEach(m, (v, k) => out.push([k, v]));
    return out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  };
  const heights: Array<[number, bigint]> = [];
  const accountHeights: Array<[string, number, bigint]> = [];
  if (state.tip !== null && state.highestTip !== null) {
    const from = Math.max(0, state.highestTip - state.historyBlocks + 1);
    for (let h = from; h <= state.highestTip; h++) {
      heights.push([h, sumHeights(state.treeShape, state.historySums, h, h)]);
      mapForEach(state.books, (book, account) => {
        const sum = sumHeights(state.treeShape, bookTree(state, book), h, h);
        if (sum !== 0n) accountHeights.push([account, h, sum]);
      });
    }
  }
  return {
    historyBlocks: state.historyBlocks,
    tip: state.tip,
    highestTip: state.highestTip,
    limits: state.limits,
    entries: entries(state.entries),
    peggedTotal: state.peggedTotal,
    accountPegged: entries(state.accountPegged),
    throttleProfile: state.throttleProfile,
    throttleInitiator: state.throttleModeInitiator,
    throttleKeys: entries(state.throttleKeys),
    withdrawals: heldWithdrawals(state).map((w) => [w.id, w]),
    withdrawalCount: heldWithdrawals(state).length,
    heights,
    accountHeights: accountHeights.sort(),
  };
}

/** The withdrawals a state holds, sorted by id. */
export function heldWithdrawals(state: LimitsState): Withdrawal[] {
  const out: Withdrawal[] = [];
  forEachWithdrawal(state, (w) => out.push(w));
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
