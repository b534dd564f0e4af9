/**
 * Loosening: whether going from one state to another lets more through (docs/semantics.md,
 * "Loosening waits"). A service may make such a change wait (a delay in blocks, a quorum of
 * operators) while it applies every other change at once: tightening is never delayed.
 *
 * A change loosens when, globally or for an account with an entry before or after:
 * - a cap (`perWithdrawalCap`, `perDepositCap`, `pegCap`, `rollingWithdrawalCap`, an
 *   entry's own `pegCap` and window cap) is raised or removed, or a window cap's share of
 *   the pegged total (`rollingWithdrawalCapShare`, an entry's own) is raised or removed;
 * - a window (`rollingWithdrawalBlocks`, an entry's own) is shortened or removed;
 * - `perDepositMinimum` is lowered or removed;
 * - throttle mode ends, or a throttle key is revoked.
 *
 * The caps compared are the effective ones: an entry's fields resolved against the global
 * ones, and throttle mode's overlay laid on them. While throttle mode is on (before or
 * after), the configured caps are compared as well: a cap raised under the overlay shows
 * the moment the brake is released, so raising it is a loosening even when the overlay
 * hides it for now.
 */
import type { Amount } from './amount.js';
import type { LimitsState } from './draft.js';
import type { Caps } from './limits.js';
import { type ResolvedCaps, resolveCaps } from './limits.js';
import { mapDiffKeys, mapForEach, mapGet } from './pmap.js';
import { throttledEntry, throttledGlobal } from './throttle.js';

/** A field of the effective caps that a change may loosen. */
export type LoosenedField =
  | 'pegCap'
  | 'accountPegCap'
  | 'perDepositCap'
  | 'perDepositMinimum'
  | 'perWithdrawalCap'
  | 'rollingWithdrawalBlocks'
  | 'rollingWithdrawalCap'
  | 'accountRollingWithdrawalBlocks'
  | 'accountRollingWithdrawalCap'
  | 'rollingWithdrawalCapShare'
  | 'accountRollingWithdrawalCapShare';

/** One way a change loosens the limits. */
export type Loosening =
  | {
      readonly kind: 'cap';
      /** The account whose effective caps loosen, or `null` for the global caps. */
      readonly account: string | null;
      readonly field: LoosenedField;
      readonly before: Amount;
      /** The new value; `null` when the field is no longer set (no cap, no minimum). */
      readonly after: Amount | null;
      /**
       * `effective`: what views and checks see now; `configured`: the caps beneath throttle
       * mode's overlay, which show once it ends.
       */
      readonly view: 'effective' | 'configured';
    }
  | { readonly kind: 'throttleEnded'; readonly initiator: string }
  | { readonly kind: 'keyRevoked'; readonly name: string };

// Each field and which way loosens it: up for caps, down for windows and minimums (and
// removing any of them loosens).
const FIELDS: ReadonlyArray<readonly [LoosenedField, 1 | -1]> = [
  ['perWithdrawalCap', 1],
  ['perDepositCap', 1],
  ['pegCap', 1],
  ['accountPegCap', 1],
  ['rollingWithdrawalCap', 1],
  ['accountRollingWithdrawalCap', 1],
  ['rollingWithdrawalCapShare', 1],
  ['accountRollingWithdrawalCapShare', 1],
  ['rollingWithdrawalBlocks', -1],
  ['accountRollingWithdrawalBlocks', -1],
  ['perDepositMinimum', -1],
];

// An account's caps (or the global ones, entry undefined), resolved, with or without the
// overlay that throttle mode lays on them while it is on.
function resolved(state: LimitsState, entry: Caps | undefined, overlay: boolean): ResolvedCaps {
  if (!overlay || state.throttleInitiator === null) return resolveCaps(state.limits, entry);
  const profile = state.throttleProfile;
  return resolveCaps(
    throttledGlobal(state.limits, profile),
    entry === undefined ? undefined : throttledEntry(entry, profile),
  );
}

function compare(
  before: ResolvedCaps,
  after: ResolvedCaps,
  account: string | null,
  view: 'effective' | 'configured',
  seen: Set<string>,
  out: Loosening[],
): void {
  const push = (field: LoosenedField, was: Amount, now: Amount | null) => {
    const key = `${field}\u0000${account ?? ''}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push({ kind: 'cap', account, field, before: was, after: now, view });
  };
  for (const [field, looser] of FIELDS) {
    const was = before[field];
    const now = after[field];
    if (was !== null && (now === null || (looser === 1 ? now > was : now < was)))
      push(field, was, now);
  }
}

/**
 * Every way in which `after` loosens the limits of `before` (empty: it does not). The
 * global caps, the accounts whose entry differs, throttle mode and the key registry are
 * compared; an account whose entry did not change loosens only through the global caps or
 * throttle mode, which are reported as such. Pure; costs O(changed entries × log n) when
 * `after` was made from `before` (the states share what did not change).
 *
 * @example
 * ```ts
 * const r = apply(state, { type: 'limitsSet', limits: { perWithdrawalCap: 2000n } }); // was 1000n
 * if (r.ok) loosenings(state, r.state);
 * // [{ kind: 'cap', account: null, field: 'perWithdrawalCap', before: 1000n, after: 2000n, view: 'effective' }]
 * ```
 */
export function loosenings(before: LimitsState, after: LimitsState): ReadonlyArray<Loosening> {
  const out: Loosening[] = [];
  if (before === after) return out;
  if (before.throttleInitiator !== null && after.throttleInitiator === null)
    out.push({ kind: 'throttleEnded', initiator: before.throttleInitiator });
  if (before.throttleKeys !== after.throttleKeys) {
    mapForEach(after.throttleKeys, (key, name) => {
      if (key.revoked && mapGet(before.throttleKeys, name)?.revoked === false)
        out.push({ kind: 'keyRevoked', name });
    });
  }
  const throttled = before.throttleInitiator !== null || after.throttleInitiator !== null;
  const views: ReadonlyArray<'effective' | 'configured'> = throttled
    ? ['effective', 'configured']
    : ['effective'];
  const seen = new Set<string>();
  const sameGlobal =
    before.limits === after.limits &&
    before.throttleInitiator === after.throttleInitiator &&
    before.throttleProfile === after.throttleProfile;
  if (!sameGlobal) {
    for (const view of views)
      compare(
        resolved(before, undefined, view === 'effective'),
        resolved(after, undefined, view === 'effective'),
        null,
        view,
        seen,
        out,
      );
  }
  if (before.entries !== after.entries) {
    const accounts = new Set<string>();
    mapDiffKeys(before.entries, after.entries, (account) => accounts.add(account));
    for (const account of [...accounts].sort()) {
      const was = mapGet(before.entries, account);
      const now = mapGet(after.entries, account);
      if (was === now) continue;
      for (const view of views)
        compare(
          resolved(before, was, view === 'effective'),
          resolved(after, now, view === 'effective'),
          account,
          view,
          seen,
          out,
        );
    }
  }
  return out;
}

/**
 * Whether `after` loosens the limits of `before`: {@link loosenings} is not empty.
 *
 * @example
 * ```ts
 * loosens(state, afterRaisingACap);   // true
 * loosens(state, afterLoweringACap);  // false
 * ```
 */
export function loosens(before: LimitsState, after: LimitsState): boolean {
  return loosenings(before, after).length > 0;
}
