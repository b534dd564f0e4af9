/** Small helpers for the example tests. */
import { expect } from 'vitest';
import {
  apply,
  applyAll,
  type CapsInput,
  createLimitsState,
  type LimitsEvent,
  type LimitsOptions,
  type LimitsState,
} from '../src/index.js';

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
