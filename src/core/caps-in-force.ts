/**
 * The caps in force: what every view, check, batch admission and `whenAvailable` sees of the
 * configured caps. Three overlays, in this order, none rewriting what is configured: each
 * window cap's share (the withdrawal window's, the mint window's) of the pegged total's basis (the lower of the fixed cap and the share of
 * the lowest total in force during the window, rounded down: `pegged-totals.ts`), throttle
 * mode's profile (`throttle.ts`), and, while the limits fail closed on the peg's backing
 * (`integrity.ts`), zero caps. This module composes them, globally and for an account entry.
 */
import type { Amount } from './amount.js';
import type { Height, LimitsState, Observation } from './draft.js';
import { pegFailure } from './integrity.js';
import { type Caps, isAccountName } from './limits.js';
import { shareBasis } from './pegged-totals.js';
import { mapGet } from './pmap.js';
import { throttledEntry, throttledGlobal } from './throttle.js';

/**
 * The share `share` (basis points) of `total`, rounded down (fail closed): what a window cap
 * set as a share allows at that total.
 */
function shareOf(total: Amount, share: Amount): Amount {
  return (total * share) / 10_000n;
}

function lower(a: Amount, b: Amount): Amount {
  return b < a ? b : a;
}

// The caps with the window caps in force: for the withdrawal window and the mint window, the
// lower of the fixed cap and the share of the total's basis over `totals` with that window's
// length (the same caps when no share is set).
function withShare(
  caps: Caps,
  totals: ReadonlyArray<Observation> | undefined,
  tip: Height | null,
): Caps {
  const share = caps.rollingWithdrawalCapShare;
  const mintShare = caps.rollingMintCapShare;
  if (share === null && mintShare === null) return caps;
  // Written out, not spread: this runs at every view and check of a state with a share.
  return {
    pegCap: caps.pegCap,
    perDepositCap: caps.perDepositCap,
    perDepositMinimum: caps.perDepositMinimum,
    perWithdrawalCap: caps.perWithdrawalCap,
    rollingWithdrawalBlocks: caps.rollingWithdrawalBlocks,
    rollingWithdrawalCap: capUnderShare(
      caps.rollingWithdrawalCap,
      share,
      caps.rollingWithdrawalBlocks,
      totals,
      tip,
    ),
    rollingWithdrawalCapShare: share,
    rollingMintBlocks: caps.rollingMintBlocks,
    rollingMintCap: capUnderShare(
      caps.rollingMintCap,
      mintShare,
      caps.rollingMintBlocks,
      totals,
      tip,
    ),
    rollingMintCapShare: mintShare,
  };
}

// One window's cap in force: the lower of the fixed cap and the share of the basis.
function capUnderShare(
  cap: Amount | null,
  share: Amount | null,
  blocks: Amount | null,
  totals: ReadonlyArray<Observation> | undefined,
  tip: Height | null,
): Amount | null {
  if (share === null || cap === null || blocks === null) return cap;
  return lower(cap, shareOf(shareBasis(totals, tip, blocks), share));
}

// Failing closed on the peg's backing: nothing may be withdrawn or deposited. The global
// per-transfer caps read 0, and each window cap 0 where its window is set.
function closedGlobal(caps: Caps): Caps {
  return {
    ...caps,
    perDepositCap: 0n,
    perWithdrawalCap: 0n,
    rollingWithdrawalCap: caps.rollingWithdrawalCap === null ? null : 0n,
    rollingMintCap: caps.rollingMintCap === null ? null : 0n,
  };
}

// An entry while failing closed: its set caps read 0, its unset ones stay unset (the zero
// global caps apply to them).
function closedEntry(caps: Caps): Caps {
  const zero = (v: Amount | null) => (v === null ? null : 0n);
  return {
    ...caps,
    perDepositCap: zero(caps.perDepositCap),
    perWithdrawalCap: zero(caps.perWithdrawalCap),
    rollingWithdrawalCap: zero(caps.rollingWithdrawalCap),
    rollingMintCap: zero(caps.rollingMintCap),
  };
}

/**
 * The global caps every view and check sees: the window cap in force (the lower of the
 * fixed cap and its share of the pegged total's basis), then throttle mode's overlay, then
 * zero caps while the limits fail closed on the peg's backing.
 */
export function globalCapsInForce(state: LimitsState): Caps {
  let caps = globalCaps.get(state);
  if (caps === undefined) {
    caps = fixed(state, withShare(state.limits, state.totals, state.tip), true);
    globalCaps.set(state, caps);
  }
  return caps;
}

// A state never changes: its global caps in force are made once, at its first view or check.
const globalCaps = new WeakMap<LimitsState, Caps>();

/**
 * An account entry as every view and check sees it (its window cap in force against the
 * basis of the account's own pegged total, then the overlays), or `undefined` when the
 * account has none.
 */
export function entryCapsInForce(
  state: LimitsState,
  entry: Caps | undefined,
  account: string,
): Caps | undefined {
  if (entry === undefined) return entry;
  const caps =
    entry.rollingWithdrawalCapShare === null && entry.rollingMintCapShare === null
      ? entry
      : withShare(entry, mapGet(state.accountTotals, account), state.tip);
  return fixed(state, caps, false);
}

// The overlays beneath which no share reaches: throttle mode's, then failing closed.
function fixed(state: LimitsState, caps: Caps, global: boolean): Caps {
  const throttled =
    state.throttleModeInitiator === null
      ? caps
      : global
        ? throttledGlobal(caps, state.throttleProfile)
        : throttledEntry(caps, state.throttleProfile);
  if (pegFailure(state) === null) return throttled;
  return global ? closedGlobal(throttled) : closedEntry(throttled);
}

/**
 * The global caps beneath the share: the fixed window cap, throttle mode's overlay included
 * (not the zeros of failing closed: what shows again once the peg's check lets through).
 */
export function fixedGlobal(state: LimitsState): Caps {
  return state.throttleModeInitiator === null
    ? state.limits
    : throttledGlobal(state.limits, state.throttleProfile);
}

/** An entry beneath its share: its fixed window cap (throttle mode's overlay included), when it has an entry. */
export function fixedEntry(state: LimitsState, entry: Caps | undefined): Caps | undefined {
  if (entry === undefined || state.throttleModeInitiator === null) return entry;
  return throttledEntry(entry, state.throttleProfile);
}

/** Which window's length a basis is taken over: the withdrawal window's or the mint window's. */
type WindowKind = 'withdrawal' | 'mint';

function blocksOf(caps: Caps | undefined, kind: WindowKind): Amount | null {
  if (caps === undefined) return null;
  return kind === 'withdrawal' ? caps.rollingWithdrawalBlocks : caps.rollingMintBlocks;
}

/**
 * The basis the global window cap's share applies to at the state's tip (see `shareBasis`),
 * over the withdrawal window's length or the mint window's.
 */
export function globalShareBasis(state: LimitsState, kind: WindowKind = 'withdrawal'): Amount {
  const blocks = blocksOf(state.limits, kind);
  return blocks === null ? state.peggedTotal : shareBasis(state.totals, state.tip, blocks);
}

/** The basis an entry's window cap's share applies to: of the account's own totals. */
export function accountShareBasis(
  state: LimitsState,
  entry: Caps | undefined,
  account: string,
  kind: WindowKind = 'withdrawal',
): Amount {
  if (!isAccountName(account)) return 0n;
  const blocks = blocksOf(entry, kind);
  const totals = mapGet(state.accountTotals, account);
  if (blocks === null) return mapGet(state.accountPegged, account) ?? 0n;
  return shareBasis(totals, state.tip, blocks);
}

function capOf(caps: Caps, kind: WindowKind): Amount | null {
  return kind === 'withdrawal' ? caps.rollingWithdrawalCap : caps.rollingMintCap;
}

/**
 * The global window cap in force were the tip `tip` and nothing else changed: the share's
 * basis taken at that tip (it only rises as the lower totals leave the window), the other
 * overlays as they are now. The withdrawal window's, or the mint window's.
 */
export function globalWindowCapAt(
  state: LimitsState,
  tip: Height,
  kind: WindowKind = 'withdrawal',
): Amount | null {
  return capOf(fixed(state, withShare(state.limits, state.totals, tip), true), kind);
}

/** The same for an account entry's own window, over the account's own totals. */
export function entryWindowCapAt(
  state: LimitsState,
  entry: Caps,
  account: string,
  tip: Height,
  kind: WindowKind = 'withdrawal',
): Amount | null {
  return capOf(
    fixed(state, withShare(entry, mapGet(state.accountTotals, account), tip), false),
    kind,
  );
}
