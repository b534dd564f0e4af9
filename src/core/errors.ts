/**
 * Every error code the library can return, stable across releases.
 * The README lists each with its meaning.
 */
export type LimitsErrorCode =
  | 'invalid_option'
  | 'invalid_event'
  | 'unknown_field'
  | 'invalid_amount'
  | 'invalid_height'
  | 'invalid_account'
  | 'invalid_withdrawal_id'
  | 'incomplete_rolling_window'
  | 'window_exceeds_history'
  | 'minimum_above_cap'
  | 'invalid_share'
  | 'height_not_above_tip'
  | 'height_not_below_tip'
  | 'reorg_too_deep'
  | 'height_ahead_of_tip'
  | 'duplicate_withdrawal'
  | 'unknown_withdrawal'
  | 'invalid_deposit_id'
  | 'duplicate_deposit'
  | 'invalid_amount_text'
  | 'too_many_decimals'
  | 'amount_out_of_range'
  | 'invalid_json'
  | 'invalid_key_name'
  | 'invalid_secret_hash'
  | 'duplicate_key'
  | 'unknown_key'
  | 'weak_secret'
  | 'invalid_request'
  | 'invalid_credentials'
  | 'key_revoked'
  | 'invalid_snapshot'
  | 'chain_bound_exceeded'
  | 'invalid_change'
  | 'invalid_change_id'
  | 'change_loosens_nothing'
  | 'change_not_found'
  | 'scope_denied';

/**
 * The base of every error the project throws, the adapters' included: a stable snake_case
 * `code` to branch on, and a `message` for a person. Catch it to catch any of them; branch on
 * `code`, or on the subclass ({@link LimitsError}, the event log's `LogConflict`, `LogBusy`,
 * `LogUnavailable`, and the server's errors).
 *
 * @example
 * ```ts
 * try {
 *   formatAmount(1.5 as unknown as bigint);
 * } catch (e) {
 *   if (e instanceof PegLimitsError) console.log(e.code); // 'invalid_amount'
 * }
 * ```
 */
export class PegLimitsError extends Error {
  /** Stable machine-readable code, snake_case. */
  readonly code: string;

  constructor(code: string, message?: string, options?: { readonly cause?: unknown }) {
    super(message, options);
    this.name = 'PegLimitsError';
    this.code = code;
  }
}

/**
 * An error with a stable snake_case `code`, a `message` that says what was wrong, and the
 * `path` of the field at fault when there is one. The three are kept apart: the message
 * never repeats the path, and an error of a batch carries the event's index in its path
 * (`[3].amount`), never in its message.
 *
 * Returned as data by everything that takes outside input; thrown only for a programmer's
 * error: bad options at set-up ({@link createLimitsState}), or an argument its type rules
 * out.
 *
 * @example
 * ```ts
 * const r = apply(state, { type: 'blockConnected', height: -1 });
 * if (!r.ok) console.log(r.error.code, r.error.path); // 'invalid_height' 'height'
 * ```
 */
export class LimitsError extends PegLimitsError {
  /** Stable machine-readable code. */
  declare readonly code: LimitsErrorCode;
  /** Dotted path of the field at fault (`limits.accountCaps.alice.pegCap`), if any. */
  readonly path: string | undefined;
  /**
   * For an error of a batch (`applyAll`, `checkChainBounds`), the index of the event at
   * fault: the number `path` starts with (`[3].amount`), as a number.
   */
  readonly event: number | undefined;

  constructor(code: LimitsErrorCode, message: string, path?: string, event?: number) {
    super(code, message);
    this.name = 'LimitsError';
    this.path = path;
    this.event = event;
  }
}

/**
 * What every operation that can fail on outside input returns: `{ ok: true, …fields }` or
 * `{ ok: false, error }`. The error is a {@link LimitsError}, except for the HTTP client,
 * whose error is the service's problem object (`Problem`: `code`, `message`, `path` too).
 *
 * @example
 * ```ts
 * const r = applyAll(state, events); // Result<Applied>
 * if (r.ok) state = r.state;
 * else console.error(r.error.code, r.error.path, r.error.message);
 * ```
 */
export type Result<T extends object, E = LimitsError> =
  | ({ readonly ok: true } & T)
  | { readonly ok: false; readonly error: E };

/** Joins a field name onto a dotted path. */
export function joinPath(base: string | undefined, key: string): string {
  return base === undefined || base === '' ? key : `${base}.${key}`;
}

/**
 * Where in its event an error of a batch stands: `path` after the event's index
 * (`limits.pegCap` of `[3].limits.pegCap`, `''` for the event itself), read from
 * {@link LimitsError.event}; `undefined` for an error of no batch's event. @internal
 */
export function pathInEvent(error: LimitsError): string | undefined {
  if (error.event === undefined) return undefined;
  const head = `[${error.event}]`;
  const path = error.path ?? head;
  if (!path.startsWith(head)) return path;
  const rest = path.slice(head.length);
  return rest.startsWith('.') ? rest.slice(1) : rest;
}

/**
 * Thrown inside the library to unwind to the nearest boundary, where it becomes an
 * `{ ok: false, error }` result. Never escapes a public function.
 */
export function fail(code: LimitsErrorCode, message: string, path?: string): never {
  throw new LimitsError(code, message, path);
}

/**
 * The error as one line of text for a person, its place first: `event 3: amount: expected…`
 * for a batch's event, `limits.pegCap: expected…` for a field, the message alone without a
 * path. How the service words its problem answers and the command its errors. @internal
 */
export function located(error: LimitsError): string {
  const path = error.path;
  if (path === undefined || path === '') return error.message;
  const event = /^\[(\d+)\]\.?(.*)$/.exec(path);
  if (event === null) return `${path}: ${error.message}`;
  return event[2] === ''
    ? `event ${event[1]}: ${error.message}`
    : `event ${event[1]}: ${event[2]}: ${error.message}`;
}

/** Describes a value for an error message without risking a throw. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'string') {
    return value.length > 40 ? `a string of ${value.length} characters` : JSON.stringify(value);
  }
  if (typeof value === 'number') return `the number ${value}`;
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : String(typeof value);
}
