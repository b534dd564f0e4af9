/**
 * The peg's backing (docs/semantics.md, "A forged mint cannot be withdrawn"): the reserves
 * that back the pegged token, read from the base chain (`reservesObserved`), the check an
 * operator sets (`pegIntegritySet { maxUnbacked, reservesMaxAge }`) and the breaker that
 * latches. The peg is unbacked when the pegged total exceeds the reserves by more than
 * `maxUnbacked`; the first time it is, the breaker trips and stays tripped whatever is
 * observed next, until an operator clears it (`pegBreakerCleared`) or turns the check off.
 * While the check is on and the reserves are unknown (never read, or read more than
 * `reservesMaxAge` blocks below the tip) the limits fail closed too, without latching.
 * Failing closed, every withdrawal and deposit is refused and every view shows zero caps
 * (an overlay: `caps-in-force.ts`).
 */
import { type Amount, requireCap } from './amount.js';
import type { Draft, Height, IntegrityPolicy, LimitsState, Tripped } from './draft.js';
import { describe, fail, joinPath } from './errors.js';
import { requireHeight } from './heights.js';

/** The reserves' age, in blocks, past which they are unknown, until an operator sets it. */
export const DEFAULT_RESERVES_MAX_AGE = 6;

/** The check as a state starts: off. */
export const NO_INTEGRITY_CHECK: IntegrityPolicy = {
  maxUnbacked: null,
  reservesMaxAge: DEFAULT_RESERVES_MAX_AGE,
};

/** What the check sees: off, backed, the reserves unknown, or tripped (which wins). */
export type PegIntegrityState = 'off' | 'backed' | 'reserves_unknown' | 'tripped';

/** The check of the peg's backing as `GET /integrity` and {@link pegIntegrity} give it. */
export interface PegIntegrity {
  readonly state: PegIntegrityState;
  /** The global pegged total last observed. */
  readonly peggedTotal: Amount;
  /** The reserves last read, or `null` before any reading. */
  readonly reserves: Amount | null;
  /** The burn height they were read at, or `null` before any reading. */
  readonly reservesHeight: Height | null;
  /** `max(0, peggedTotal − reserves)` while the reserves are known (read, fresh); else `null`. */
  readonly unbacked: Amount | null;
  /** How much may be unbacked before the breaker trips; `null`: the check is off. */
  readonly maxUnbacked: Amount | null;
  /** The reserves' age, in blocks below the tip, past which they are unknown. */
  readonly reservesMaxAge: number;
  /** Where the breaker tripped (the tip, and the figures then), or `null`. */
  readonly tripped: Tripped | null;
}

/** Why the limits fail closed on the peg's backing: `peg_unbacked` (tripped) or `reserves_unknown`. */
export type PegFailure = 'peg_unbacked' | 'reserves_unknown';

// Whether the reserves read are known at the state's tip: read, and at most
// `reservesMaxAge` blocks below the tip (a reading above the tip, or before any block, is
// fresh: the base chain's node may be ahead of the feed).
function reservesKnown(s: Pick<LimitsState, 'reserves' | 'tip' | 'integrity'>): boolean {
  const r = s.reserves;
  if (r === null) return false;
  return s.tip === null || s.tip - r.height <= s.integrity.reservesMaxAge;
}

function unbackedOf(s: Pick<LimitsState, 'reserves' | 'tip' | 'integrity' | 'peggedTotal'>) {
  if (!reservesKnown(s)) return null;
  const short = s.peggedTotal - s.reserves!.total;
  return short > 0n ? short : 0n;
}

/**
 * Why the limits fail closed now, or `null` when they do not: the breaker tripped, or the
 * check is on and the reserves are unknown. Tripped wins.
 */
export function pegFailure(state: LimitsState): PegFailure | null {
  if (state.integrity.maxUnbacked === null) return null;
  if (state.tripped !== null) return 'peg_unbacked';
  return reservesKnown(state) ? null : 'reserves_unknown';
}

/**
 * What the check of the peg's backing sees: its state (`off`, `backed`, `reserves_unknown`,
 * `tripped`), the pegged total and the reserves, how much is unbacked, the policy, and where
 * the breaker tripped. The body of `GET /integrity`.
 *
 * @example
 * ```ts
 * pegIntegrity(state);
 * // { state: 'backed', peggedTotal: 1000n, reserves: 1000n, reservesHeight: 870000,
 * //   unbacked: 0n, maxUnbacked: 50000n, reservesMaxAge: 6, tripped: null }
 * ```
 */
export function pegIntegrity(state: LimitsState): PegIntegrity {
  const failure = pegFailure(state);
  return {
    state:
      state.integrity.maxUnbacked === null
        ? 'off'
        : failure === 'peg_unbacked'
          ? 'tripped'
          : failure === 'reserves_unknown'
            ? 'reserves_unknown'
            : 'backed',
    peggedTotal: state.peggedTotal,
    reserves: state.reserves?.total ?? null,
    reservesHeight: state.reserves?.height ?? null,
    unbacked: unbackedOf(state),
    maxUnbacked: state.integrity.maxUnbacked,
    reservesMaxAge: state.integrity.reservesMaxAge,
    tripped: state.tripped,
  };
}

/**
 * The breaker, after an event: the first time the peg is unbacked (the check on, the
 * reserves known, more unbacked than allowed) it trips where it stands. Runs after every
 * event, so no state the events pass through escapes it.
 */
export function settleBreaker(d: Draft): void {
  const max = d.integrity.maxUnbacked;
  if (max === null || d.tripped !== null) return;
  const unbacked = unbackedOf(d);
  if (unbacked === null || unbacked <= max) return;
  d.tripped = {
    height: d.tip,
    peggedTotal: d.peggedTotal,
    reserves: d.reserves!.total,
    unbacked,
  };
  d.changed = true;
}

/** `reservesObserved { total, height }`: the reserves that back the peg, read at burn height `height`. */
export function reservesObserved(d: Draft, e: Record<string, unknown>): void {
  const total = requireCap(e.total, 'total');
  const height = requireHeight(e.height, 'height');
  const r = d.reserves;
  if (r !== null && r.total === total && r.height === height) return;
  d.reserves = { total, height };
  d.changed = true;
}

/**
 * A number of blocks from 1 on (`reservesMaxAge`), a `number` as heights are (JSON text is
 * read into one by the codec); throws `invalid_amount` otherwise, a `bigint` included.
 */
function requireBlocks(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)
    fail('invalid_amount', `expected a number of blocks, 1 or more, got ${describe(value)}`, path);
  return value;
}

/**
 * The check's policy from an event's fields (`maxUnbacked` an amount or `null` for no check,
 * `reservesMaxAge` a number of blocks from 1 on); throws a LimitsError naming the field.
 */
export function requireIntegrityPolicy(
  e: Readonly<Record<string, unknown>>,
  path = '',
): IntegrityPolicy {
  const at = (f: string) => joinPath(path, f);
  if (!('maxUnbacked' in e))
    fail(
      'invalid_event',
      'maxUnbacked is required: an amount, or null for no check',
      at('maxUnbacked'),
    );
  const maxUnbacked = e.maxUnbacked === null ? null : requireCap(e.maxUnbacked, at('maxUnbacked'));
  return { maxUnbacked, reservesMaxAge: requireBlocks(e.reservesMaxAge, at('reservesMaxAge')) };
}

/**
 * `pegIntegritySet { maxUnbacked, reservesMaxAge }`: sets the check (`maxUnbacked` null turns
 * it off, which clears the breaker); a peg unbacked under the new policy trips it at once.
 */
export function pegIntegritySet(d: Draft, e: Record<string, unknown>): void {
  const policy = requireIntegrityPolicy(e);
  const was = d.integrity;
  if (was.maxUnbacked === policy.maxUnbacked && was.reservesMaxAge === policy.reservesMaxAge)
    return;
  d.integrity = policy;
  if (policy.maxUnbacked === null) d.tripped = null;
  d.changed = true;
}

/**
 * `pegBreakerCleared`: an operator clears the tripped breaker (a no-op when it has not
 * tripped); a peg still unbacked trips it again at once.
 */
export function pegBreakerCleared(d: Draft): void {
  if (d.tripped === null) return;
  d.tripped = null;
  d.changed = true;
}
