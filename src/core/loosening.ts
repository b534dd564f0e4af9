/**
 * Loosening, in one place (docs/semantics.md, "Loosening waits"): whether going from one
 * state to another lets more through, what a batch loosens, and the policy a service keeps
 * for such a change (a delay in blocks, a quorum of operators) while it applies every other
 * change at once: tightening is never delayed. The pending changes that wait are the state's
 * (`changes.ts`), and the rule that a proposal must loosen something is theirs.
 *
 * A change loosens when, globally or for an account with an entry before or after:
 * - a cap (`perWithdrawalCap`, `perDepositCap`, `pegCap`, `rollingWithdrawalCap`, an
 *   entry's own `pegCap` and window cap) is raised or removed, or a window cap's share of
 *   the pegged total (`rollingWithdrawalCapShare`, an entry's own) is raised or removed;
 * - a window (`rollingWithdrawalBlocks`, an entry's own) is shortened or removed;
 * - the same of the mint window (`rollingMintCap`, `rollingMintCapShare` raised or removed,
 *   `rollingMintBlocks` shortened or removed, globally or an entry's own), or the mint
 *   history's start (`mintHistoryCompleteFrom`) lowered;
 * - `perDepositMinimum` is lowered or removed;
 * - throttle mode ends, or a throttle key is revoked;
 * - the check of the peg's backing lets more through (more unbacked, older reserves, no check),
 *   or its tripped breaker is cleared.
 *
 * The caps compared are the effective ones: an entry's fields resolved against the global
 * ones, and throttle mode's overlay laid on them. While throttle mode is on (before or
 * after), the configured caps are compared as well: a cap raised under the overlay shows
 * the moment the brake is released, so raising it is a loosening even when the overlay
 * hides it for now.
 */
import type { Amount } from './amount.js';
import type { LimitsState, Tripped } from './draft.js';
import { describe, fail, joinPath, LimitsError, type Result } from './errors.js';
import type { LimitsEvent } from './events.js';
import { heightFromJson } from './heights.js';
import type { Caps } from './limits.js';
import { isRecord, type ResolvedCaps, rejectUnknownFields, resolveCaps } from './limits.js';
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
  | 'accountRollingWithdrawalCapShare'
  | 'rollingMintBlocks'
  | 'rollingMintCap'
  | 'rollingMintCapShare'
  | 'accountRollingMintBlocks'
  | 'accountRollingMintCap'
  | 'accountRollingMintCapShare';

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
  | { readonly kind: 'keyRevoked'; readonly name: string }
  /**
   * The check of the peg's backing lets more through: more may be unbacked (`after` null:
   * the check is off), or older reserves are taken as known.
   */
  | {
      readonly kind: 'integrity';
      readonly field: 'maxUnbacked' | 'reservesMaxAge';
      readonly before: Amount | number;
      readonly after: Amount | number | null;
    }
  /** The tripped breaker is cleared (or the check turned off): the limits open again. */
  | { readonly kind: 'breakerCleared'; readonly tripped: Tripped }
  /**
   * The mint history's start (`mintHistoryCompleteFrom`) is lowered: a mint window that
   * reported no room reports it sooner.
   */
  | { readonly kind: 'mintHistory'; readonly before: number; readonly after: number | null };

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
  ['rollingMintCap', 1],
  ['accountRollingMintCap', 1],
  ['rollingMintCapShare', 1],
  ['accountRollingMintCapShare', 1],
  ['rollingMintBlocks', -1],
  ['accountRollingMintBlocks', -1],
  ['perDepositMinimum', -1],
];

// An account's caps (or the global ones, entry undefined), resolved, with or without the
// overlay that throttle mode lays on them while it is on.
function resolved(state: LimitsState, entry: Caps | undefined, overlay: boolean): ResolvedCaps {
  if (!overlay || state.throttleModeInitiator === null) return resolveCaps(state.limits, entry);
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
  if (before.throttleModeInitiator !== null && after.throttleModeInitiator === null)
    out.push({ kind: 'throttleEnded', initiator: before.throttleModeInitiator });
  if (before.throttleKeys !== after.throttleKeys) {
    mapForEach(after.throttleKeys, (key, name) => {
      if (key.revoked && mapGet(before.throttleKeys, name)?.revoked === false)
        out.push({ kind: 'keyRevoked', name });
    });
  }
  integrityLoosenings(before, after, out);
  const mintFrom = before.mintCompleteFrom;
  if (mintFrom !== null && (after.mintCompleteFrom === null || after.mintCompleteFrom < mintFrom))
    out.push({ kind: 'mintHistory', before: mintFrom, after: after.mintCompleteFrom });
  const throttled = before.throttleModeInitiator !== null || after.throttleModeInitiator !== null;
  const views: ReadonlyArray<'effective' | 'configured'> = throttled
    ? ['effective', 'configured']
    : ['effective'];
  const seen = new Set<string>();
  const sameGlobal =
    before.limits === after.limits &&
    before.throttleModeInitiator === after.throttleModeInitiator &&
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

// The check of the peg's backing loosens when it was on and lets more through after: more
// unbacked, older reserves, or no check at all; and a tripped breaker cleared loosens.
function integrityLoosenings(before: LimitsState, after: LimitsState, out: Loosening[]): void {
  const was = before.integrity;
  const now = after.integrity;
  if (was !== now && was.maxUnbacked !== null) {
    if (now.maxUnbacked === null || now.maxUnbacked > was.maxUnbacked)
      out.push({
        kind: 'integrity',
        field: 'maxUnbacked',
        before: was.maxUnbacked,
        after: now.maxUnbacked,
      });
    if (now.maxUnbacked !== null && now.reservesMaxAge > was.reservesMaxAge)
      out.push({
        kind: 'integrity',
        field: 'reservesMaxAge',
        before: was.reservesMaxAge,
        after: now.reservesMaxAge,
      });
  }
  if (before.tripped !== null && after.tripped === null)
    out.push({ kind: 'breakerCleared', tripped: before.tripped });
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

/**
 * What `events` would loosen if they applied on `state`, field by field, before and after
 * (none when they do not apply): what a pending change's listing, alert and record say.
 * `applyAll` is the state's own (`state.ts` sits above this module, whose rule of loosening
 * its pending changes read).
 *
 * @example
 * ```ts
 * loosenedBy(state, [{ type: 'limitsUpdated', limits: { perWithdrawalCap: 2000n } }], applyAll);
 * // [{ kind: 'cap', account: null, field: 'perWithdrawalCap', before: 1000n, after: 2000n, view: 'effective' }]
 * ```
 */
export function loosenedBy(
  state: LimitsState,
  events: ReadonlyArray<LimitsEvent>,
  applyAll: (
    state: LimitsState,
    events: ReadonlyArray<LimitsEvent>,
  ) => { readonly ok: true; readonly state: LimitsState } | { readonly ok: false },
): ReadonlyArray<Loosening> {
  const r = applyAll(state, events);
  return r.ok ? loosenings(state, r.state) : [];
}

// ---- the policy: what a loosening waits for -----------------------------------------------

/** The most blocks a change may wait: about nineteen years of Bitcoin blocks. */
const MAX_DELAY_BLOCKS = 1_000_000;
/** The largest quorum a change may ask for. */
const MAX_QUORUM = 1_000;

/** A delay in blocks: null (none by time) or `min` to 1,000,000 (a change's, or a policy's). */
export function delayOf(
  value: unknown,
  min: number,
  code: 'invalid_change' | 'invalid_option',
  path: string,
): number | null {
  const n = heightFromJson(value);
  if (n === null) return null;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < min || n > MAX_DELAY_BLOCKS)
    fail(
      code,
      `expected null or a number of blocks from ${min} to ${MAX_DELAY_BLOCKS}, got ${describe(value)}`,
      path,
    );
  return n;
}

/** A quorum: 0 (none) or 2 to 1,000 approvals (the proposer alone is no quorum). */
export function quorumOf(
  value: unknown,
  code: 'invalid_change' | 'invalid_option',
  path: string,
): number {
  const n = heightFromJson(value);
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n === 1 || n < 0 || n > MAX_QUORUM)
    fail(
      code,
      `expected a quorum of 0 (none) or 2 to ${MAX_QUORUM} approvals, got ${describe(value)}`,
      path,
    );
  return n;
}

/**
 * What a service makes a loosening wait for: `delayBlocks` blocks (null: no time is enough)
 * or `quorum` approvals (0: none; otherwise at least 2). `delayBlocks: 0` applies a
 * loosening at once, as every other change.
 */
export interface LooseningPolicy {
  readonly delayBlocks: number | null;
  readonly quorum: number;
}

/** Loosening applies at once: the default. */
export const NO_WAITING: LooseningPolicy = { delayBlocks: 0, quorum: 0 };

/** Whether a loosening waits under `policy`. */
export function looseningWaits(policy: LooseningPolicy): boolean {
  return policy.delayBlocks !== 0;
}

/**
 * Reads a loosening policy as a configuration gives it: `delayBlocks` null or 0 to
 * 1,000,000, `quorum` 0 or 2 to 1,000, and one that can apply a change (not null and 0) and
 * means what it says (a quorum with `delayBlocks: 0`, which applies everything at once, is
 * refused). A missing field is 0. An error is `invalid_option`, with the field's path.
 *
 * @example
 * ```ts
 * looseningPolicyFromJson({ delayBlocks: 6, quorum: 2 }); // { ok: true, policy: { delayBlocks: 6, quorum: 2 } }
 * looseningPolicyFromJson({ quorum: 2 }).ok; // false
 * ```
 */
export function looseningPolicyFromJson(
  value: unknown,
  path = 'loosening',
): Result<{ readonly policy: LooseningPolicy }> {
  try {
    return { ok: true, policy: policyOf(value, path) };
  } catch (e) {
    if (e instanceof LimitsError) return { ok: false, error: e };
    throw e;
  }
}

/**
 * The policy of {@link looseningPolicyFromJson}, thrown as a LimitsError (`invalid_option`)
 * when it is not one.
 *
 * @deprecated Use {@link looseningPolicyFromJson}, which answers a result as every call that
 * reads outside input does.
 */
export function checkLooseningPolicy(value: unknown, path = 'loosening'): LooseningPolicy {
  return policyOf(value, path);
}

// The policy `value` gives, thrown as a LimitsError naming the field when it is not one.
function policyOf(value: unknown, path: string): LooseningPolicy {
  if (!isRecord(value))
    fail('invalid_option', `expected { delayBlocks, quorum }, got ${describe(value)}`, path);
  rejectUnknownFields(value, ['delayBlocks', 'quorum'], path);
  const delay = delayOf(
    value.delayBlocks === undefined ? 0 : value.delayBlocks,
    0,
    'invalid_option',
    joinPath(path, 'delayBlocks'),
  );
  const quorum = quorumOf(
    value.quorum === undefined ? 0 : value.quorum,
    'invalid_option',
    joinPath(path, 'quorum'),
  );
  if (delay === null && quorum === 0)
    fail(
      'invalid_option',
      'with delayBlocks null a loosening waits for a quorum only: set quorum to 2 or more',
      joinPath(path, 'quorum'),
    );
  if (delay === 0 && quorum !== 0)
    fail(
      'invalid_option',
      'with delayBlocks 0 a loosening applies at once and no quorum is ever asked: set delayBlocks to a number of blocks, or null for a quorum only',
      joinPath(path, 'delayBlocks'),
    );
  return { delayBlocks: delay, quorum };
}
