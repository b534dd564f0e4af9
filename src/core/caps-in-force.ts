/**
 * The caps in force: what every view, check, batch admission and `whenAvailable` sees of the
 * configured caps. Two overlays, in this order, neither rewriting what is configured: the
 * window cap's share of the pegged total (the lower of the fixed cap and the share, rounded
 * down), then throttle mode's profile. The throttle overlay itself is `throttle.ts`'s; this
 * module composes them, globally and for an account entry.
 */
import type { Amount } from './amount.js';
import type { LimitsState } from './draft.js';
import type { Caps } from './limits.js';
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

// The caps with the window cap in force: the lower of the fixed cap and the share of the
// total (the same caps when no share is set).
function withShare(caps: Caps, total: Amount): Caps {
  const share = caps.rollingWithdrawalCapShare;
  const cap = caps.rollingWithdrawalCap;
  if (share === null || cap === null) return caps;
  // Written out, not spread: this runs at every view and check of a state with a share.
  return {
    pegCap: caps.pegCap,
    perDepositCap: caps.perDepositCap,
    perDepositMinimum: caps.perDepositMinimum,
    perWithdrawalCap: caps.perWithdrawalCap,
    rollingWithdrawalBlocks: caps.rollingWithdrawalBlocks,
    rollingWithdrawalCap: lower(cap, shareOf(total, share)),
    rollingWithdrawalCapShare: share,
  };
}

/**
 * The global caps every view and check sees: the window cap in force (the lower of the
 * fixed cap and its share of the pegged total), then throttle mode's overlay.
 */
export function globalCapsInForce(state: LimitsState): Caps {
  const caps = withShare(state.limits, state.peggedTotal);
  return state.throttleModeInitiator === null ? caps : throttledGlobal(caps, state.throttleProfile);
}

/**
 * An account entry as every view and check sees it (its window cap in force against the
 * account's own pegged total, then the overlay), or `undefined` when the account has none.
 */
export function entryCapsInForce(
  state: LimitsState,
  entry: Caps | undefined,
  account: string,
): Caps | undefined {
  if (entry === undefined) return entry;
  const caps =
    entry.rollingWithdrawalCapShare === null
      ? entry
      : withShare(entry, mapGet(state.accountPegged, account) ?? 0n);
  return state.throttleModeInitiator === null ? caps : throttledEntry(caps, state.throttleProfile);
}

/** The global caps beneath the share: the fixed window cap (throttle overlay included). */
export function fixedGlobal(state: LimitsState): Caps {
  return state.throttleModeInitiator === null
    ? state.limits
    : throttledGlobal(state.limits, state.throttleProfile);
}

/** An entry beneath its share: its fixed window cap (overlay included), when it has an entry. */
export function fixedEntry(state: LimitsState, entry: Caps | undefined): Caps | undefined {
  if (entry === undefined || state.throttleModeInitiator === null) return entry;
  return throttledEntry(entry, state.throttleProfile);
}
