/**
 * Starting throttle mode with a key (the README, "Throttle mode"): `startThrottle`, the operation behind
 * `POST /start_throttle`. It verifies the key holder's request, applies the
 * `throttleStarted` event and reports the limits, so it sits above the state and the views;
 * throttle mode itself (profile, overlay, events) is in `throttle.ts`.
 */
import { describe, LimitsError, type Result } from './errors.js';
import { MAX_SECRET_LENGTH, verifyThrottleSecret } from './keys.js';
import { isRecord, MAX_NAME_LENGTH } from './limits.js';
import { mapGet } from './pmap.js';
import { apply, type LimitsState } from './state.js';
import { getLimits, type Limits } from './views.js';

/** What {@link startThrottle} gives when the key holder's request is accepted. */
export interface ThrottleStarted {
  /** The state with throttle mode on. */
  readonly state: LimitsState;
  /** Its limits. */
  readonly limits: Limits;
}

type StartThrottleResult = Result<ThrottleStarted>;

function invalid(message: string, path?: string): StartThrottleResult {
  return {
    ok: false,
    error: new LimitsError('invalid_request', message, path),
  };
}

function requireField(
  request: Readonly<Record<string, unknown>>,
  field: 'name' | 'secret',
  max: number,
): string | StartThrottleResult {
  const value = request[field];
  if (typeof value !== 'string' || value.length === 0) {
    return invalid(`expected a non-empty string, got ${describe(value)}`, field);
  }
  if (value.length > max) return invalid(`longer than ${max} characters`, field);
  return value;
}

/**
 * Tries to turn throttle mode on with a key's name and secret.
 *
 * A malformed request is `invalid_request`; an unknown name and a wrong secret are the same
 * `invalid_credentials`, after the same work; a revoked key is `key_revoked`, said only
 * once the secret matched. On success, returns the state with throttle mode on (the very
 * same state if it was on already: the first initiator stays) and its Limits.
 *
 * @example
 * ```ts
 * const r = startThrottle(state, { name: 'ops-1', secret });
 * if (r.ok) { state = r.state; r.limits.throttleModeInitiator; } // 'ops-1'
 * else r.error.code; // 'invalid_credentials' | 'key_revoked' | 'invalid_request'
 * ```
 */
export function startThrottle(state: LimitsState, request: unknown): Result<ThrottleStarted> {
  if (!isRecord(request))
    return invalid(`expected an object with name and secret, got ${describe(request)}`);
  const name = requireField(request, 'name', MAX_NAME_LENGTH);
  if (typeof name !== 'string') return name;
  const secret = requireField(request, 'secret', MAX_SECRET_LENGTH);
  if (typeof secret !== 'string') return secret;
  const key = mapGet(state.throttleKeys, name);
  if (!verifyThrottleSecret(key?.secretHash, secret) || key === undefined) {
    return {
      ok: false,
      error: new LimitsError('invalid_credentials', 'the key name or secret is wrong'),
    };
  }
  if (key.revoked) {
    return {
      ok: false,
      error: new LimitsError(
        'key_revoked',
        `the throttle key ${JSON.stringify(name)} has been revoked`,
      ),
    };
  }
  const r = apply(state, { type: 'throttleStarted', initiator: name });
  if (!r.ok) return r;
  return { ok: true, state: r.state, limits: getLimits(r.state) };
}
