/**
 * Throttle mode as an overlay on the configured caps (SPEC §3): while active, every view
 * and check sees tightened values; the configured values are never rewritten.
 */
import type { Amount } from './amount.js';
import type { Caps } from './limits.js';
import type { LimitsState, ThrottleProfile } from './state.js';

function min(a: Amount, b: Amount): Amount {
  return a < b ? a : b;
}

function max(a: Amount, b: Amount): Amount {
  return a > b ? a : b;
}

// Tightens the three throttled fields; an unset field takes the profile's value when
// `fillUnset`, and stays unset otherwise.
function tighten(caps: Caps, profile: ThrottleProfile, fillUnset: boolean): Caps {
  const pick = (value: Amount | null, limit: Amount, stricter: (a: Amount, b: Amount) => Amount) =>
    value === null ? (fillUnset ? limit : null) : stricter(value, limit);
  return {
    ...caps,
    perWithdrawalCap: pick(caps.perWithdrawalCap, profile.perWithdrawalCap, min),
    rollingWithdrawalBlocks: pick(
      caps.rollingWithdrawalBlocks,
      profile.rollingWithdrawalBlocks,
      max,
    ),
    rollingWithdrawalCap: pick(caps.rollingWithdrawalCap, profile.rollingWithdrawalCap, min),
  };
}

/**
 * The global caps as throttle mode shows them: the per-withdrawal cap and the window cap
 * can only go down, the window can only get longer, and an unset field takes the profile's
 * value.
 */
export function throttledGlobal(caps: Caps, profile: ThrottleProfile): Caps {
  return tighten(caps, profile, true);
}

/**
 * An account entry as throttle mode shows it: its set fields are tightened the same way;
 * unset fields stay unset, so the (tightened) global values apply to them.
 */
export function throttledEntry(caps: Caps, profile: ThrottleProfile): Caps {
  return tighten(caps, profile, false);
}

/** The global caps every view and check sees. */
export function seenGlobal(state: LimitsState): Caps {
  return state.throttleInitiator === null
    ? state.limits
    : throttledGlobal(state.limits, state.throttleProfile);
}

/** The account entry every view and check sees, or `undefined` when the account has none. */
export function seenEntry(state: LimitsState, entry: Caps | undefined): Caps | undefined {
  if (entry === undefined || state.throttleInitiator === null) return entry;
  return throttledEntry(entry, state.throttleProfile);
}
