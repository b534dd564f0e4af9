/**
 * Throttle mode (the README, "Throttle mode"): its profile, the overlay it lays on the configured caps (while
 * active, every view and check sees tightened values; the configured values are never
 * rewritten), and the events of the key registry and of throttle mode. Starting it with a
 * key (`startThrottle`) is in `start-throttle.ts`: it applies an event and reports the views, so it
 * sits above the state and the views, which both need what is here.
 */
import { type Amount, requireCap } from './amount.js';
import type { Draft, ThrottleKey, ThrottleProfile } from './draft.js';
import { describe, fail, joinPath } from './errors.js';
import { isSecretHash } from './keys.js';
import {
  type Caps,
  isRecord,
  NO_CAPS,
  rejectUnknownFields,
  requireCapRules,
  requireName,
} from './limits.js';
import { mapGet, mapSet } from './pmap.js';

/** The default throttle profile. */
export const DEFAULT_THROTTLE_PROFILE: ThrottleProfile = {
  perWithdrawalCap: 150_000_000n,
  rollingWithdrawalBlocks: 18n,
  rollingWithdrawalCap: 200_000_000n,
};

/** Validates a throttle profile against the history. Throws a LimitsError. */
export function requireProfile(
  value: unknown,
  historyBlocks: number,
  path: string,
): ThrottleProfile {
  if (!isRecord(value))
    fail('invalid_option', `expected a throttle profile object, got ${describe(value)}`, path);
  rejectUnknownFields(
    value,
    ['perWithdrawalCap', 'rollingWithdrawalBlocks', 'rollingWithdrawalCap'],
    path,
  );
  const profile: ThrottleProfile = {
    perWithdrawalCap: requireCap(value.perWithdrawalCap, joinPath(path, 'perWithdrawalCap')),
    rollingWithdrawalBlocks: requireCap(
      value.rollingWithdrawalBlocks,
      joinPath(path, 'rollingWithdrawalBlocks'),
    ),
    rollingWithdrawalCap: requireCap(
      value.rollingWithdrawalCap,
      joinPath(path, 'rollingWithdrawalCap'),
    ),
  };
  requireCapRules({ ...NO_CAPS, ...profile }, path, historyBlocks);
  return profile;
}

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

/** A throttle key's name; throws `invalid_key_name` otherwise. */
export function requireKeyName(value: unknown, path: string): string {
  return requireName(value, path, 'invalid_key_name', 'a key name');
}

function requireKey(d: Draft, name: string): ThrottleKey {
  const key = mapGet(d.throttleKeys, name);
  if (key === undefined)
    fail('unknown_key', `no throttle key is named ${JSON.stringify(name)}`, 'name');
  return key;
}

/** `throttleKeyAdded`: registers a key by name and secret hash; a name that exists is refused. */
export function throttleKeyAdded(d: Draft, e: Record<string, unknown>): void {
  const name = requireKeyName(e.name, 'name');
  if (!isSecretHash(e.secretHash)) {
    fail(
      'invalid_secret_hash',
      'expected a secret hash made by hashThrottleSecret (sha256:<salt>:<digest>)',
      'secretHash',
    );
  }
  if (mapGet(d.throttleKeys, name) !== undefined) {
    fail(
      'duplicate_key',
      `a throttle key named ${JSON.stringify(name)} exists already; revoke it or pick another name`,
      'name',
    );
  }
  d.throttleKeys = mapSet(
    d.throttleKeys,
    name,
    { name, secretHash: e.secretHash, revoked: false },
    d.owner,
  );
  d.changed = true;
}

/** `throttleKeyRevoked`: the key can no longer start throttle mode; a no-op when it is revoked already. */
export function throttleKeyRevoked(d: Draft, e: Record<string, unknown>): void {
  setRevoked(d, e, true);
}

/** `throttleKeyReactivated`: a revoked key can start throttle mode again; a no-op when it can already. */
export function throttleKeyReactivated(d: Draft, e: Record<string, unknown>): void {
  setRevoked(d, e, false);
}

// Marks the named key revoked or not.
function setRevoked(d: Draft, e: Record<string, unknown>, revoked: boolean): void {
  const key = requireKey(d, requireKeyName(e.name, 'name'));
  if (key.revoked === revoked) return;
  d.throttleKeys = mapSet(d.throttleKeys, key.name, { ...key, revoked }, d.owner);
  d.changed = true;
}

/** `throttleStarted`: turns the overlay on; while active, nothing changes and the first initiator stays. */
export function throttleStarted(d: Draft, e: Record<string, unknown>): void {
  const initiator = requireKeyName(e.initiator, 'initiator');
  if (d.throttleModeInitiator !== null) return;
  d.throttleModeInitiator = initiator;
  d.changed = true;
}

/** `throttleEnded`: removes the overlay; a no-op when throttle mode is not active. */
export function throttleEnded(d: Draft): void {
  if (d.throttleModeInitiator === null) return;
  d.throttleModeInitiator = null;
  d.changed = true;
}
