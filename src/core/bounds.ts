/**
 * Chain bounds: how far one batch may move the tip (docs/semantics.md, "Chain bounds"). A
 * block far above the tip forgets the whole window at once, and every real block after it
 * is then below the tip: one wrong height (a Stacks height where a Bitcoin height belongs)
 * would switch the window off for good. So a service refuses a `blockConnected` more than
 * `maxTipAdvance` above the tip and a `chainReorganized` more than `maxReorgDepth` below
 * it, unless a person who may change the limits says they mean it.
 *
 * A rule of requests, not of events: a batch that was let through is applied and replayed
 * like any other, so the state never depends on the bounds in force.
 */
import type { Height, LimitsState } from './draft.js';
import { LimitsError, type Result } from './errors.js';

/** How far one batch may move the tip. */
export interface ChainBounds {
  /** The most a `blockConnected` may rise above the tip, in blocks (at least 1). */
  readonly maxTipAdvance: number;
  /** The most a `chainReorganized` may go below the tip, in blocks (0: none). */
  readonly maxReorgDepth: number;
}

/** A day of Bitcoin blocks ahead, six blocks back: the defaults of {@link ChainBounds}. */
export const DEFAULT_CHAIN_BOUNDS: ChainBounds = { maxTipAdvance: 144, maxReorgDepth: 6 };

/**
 * Checks a batch against the chain bounds, following the tip through it as its chain events
 * would move it: `{ ok: true }`, or the first event past a bound as `chain_bound_exceeded`
 * (its path `[i].height`, its message naming the bound and the heights). The first block
 * (no tip yet) has no bound. Events that are not chain events, and heights that are not
 * heights, are left to `applyAll` to judge.
 *
 * @example
 * ```ts
 * // tip 870000
 * checkChainBounds(state, [{ type: 'blockConnected', height: 9_000_000_000 }]);
 * // { ok: false, error: LimitsError { code: 'chain_bound_exceeded', path: '[0].height', … } }
 * checkChainBounds(state, [{ type: 'blockConnected', height: 870_001 }]); // { ok: true }
 * ```
 */
export function checkChainBounds(
  state: LimitsState,
  events: Iterable<{ readonly type: string; readonly height?: unknown }>,
  bounds: ChainBounds = DEFAULT_CHAIN_BOUNDS,
): Result<object> {
  let tip: Height | null = state.tip;
  let i = 0;
  for (const event of events) {
    const height = event.height;
    if (typeof height === 'number' && Number.isSafeInteger(height) && height >= 0) {
      if (event.type === 'blockConnected') {
        if (tip !== null && height - tip > bounds.maxTipAdvance)
          return exceeded(
            i,
            `block ${height} is ${height - tip} above the tip ${tip}, past the bound of ${bounds.maxTipAdvance} (maxTipAdvance)`,
          );
        if (tip === null || height > tip) tip = height;
      } else if (event.type === 'chainReorganized' && tip !== null) {
        if (tip - height > bounds.maxReorgDepth)
          return exceeded(
            i,
            `a reorganization to ${height} goes ${tip - height} below the tip ${tip}, past the bound of ${bounds.maxReorgDepth} (maxReorgDepth)`,
          );
        if (height < tip) tip = height;
      }
    }
    i++;
  }
  return { ok: true };
}

function exceeded(index: number, what: string): { ok: false; error: LimitsError } {
  const path = `[${index}].height`;
  return {
    ok: false,
    error: new LimitsError('chain_bound_exceeded', what, path, index),
  };
}
