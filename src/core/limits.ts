/**
 * Caps: the seven settable limits (the six the interface reports and the window cap's share
 * of the pegged total), their validation and the account fallback (the
 * README, "Semantics"). Pure functions over plain values.
 */
import { type Amount, requireCap } from './amount.js';
import { describe, fail, joinPath, type LimitsErrorCode } from './errors.js';

/** The settable limits, global or of one account; `null` means unset. */
export interface Caps {
  readonly pegCap: Amount | null;
  readonly perDepositCap: Amount | null;
  readonly perDepositMinimum: Amount | null;
  readonly perWithdrawalCap: Amount | null;
  readonly rollingWithdrawalBlocks: Amount | null;
  readonly rollingWithdrawalCap: Amount | null;
  /**
   * The window cap as a share of the pegged total, in basis points (1 to 10,000): the cap in
   * force is the lower of `rollingWithdrawalCap` and this share of the total (globally, of
   * `peggedTotal`; in an entry, of that account's). It only tightens, and needs a window.
   */
  readonly rollingWithdrawalCapShare: Amount | null;
  /**
   * The mint window's length in blocks: the mints (`depositMinted`) of the last this many
   * heights count against `rollingMintCap` (globally all mints; in an entry, that account's).
   */
  readonly rollingMintBlocks: Amount | null;
  /** The most that may be minted in the mint window (set with `rollingMintBlocks`). */
  readonly rollingMintCap: Amount | null;
  /**
   * The mint window's cap as a share of the pegged total, in basis points (1 to 10,000), as
   * `rollingWithdrawalCapShare` is the withdrawal window's: it only tightens, and needs a window.
   */
  readonly rollingMintCapShare: Amount | null;
}

/** Caps as given by a caller: an absent field is `null`. */
export type CapsInput = { readonly [K in keyof Caps]?: Amount | null | undefined };

/** The input of `createLimitsState({ limits })` and of the `limitsSet` event. */
export interface LimitsConfig extends CapsInput {
  /** Account entries to replace; accounts not listed are left as they are. */
  readonly accountCaps?:
    | Readonly<Record<string, CapsInput>>
    | ReadonlyMap<string, CapsInput>
    | undefined;
}

/** The names of the six caps the interface reports, in its order. */
export const REPORTED_CAP_FIELDS = [
  'pegCap',
  'perDepositCap',
  'perDepositMinimum',
  'perWithdrawalCap',
  'rollingWithdrawalBlocks',
  'rollingWithdrawalCap',
] as const satisfies ReadonlyArray<keyof Caps>;

/** The names of the mint window's fields. */
export const MINT_FIELDS = [
  'rollingMintBlocks',
  'rollingMintCap',
  'rollingMintCapShare',
] as const satisfies ReadonlyArray<keyof Caps>;

/**
 * The names of every settable field: the six of the interface, the window's share, and the
 * mint window's three.
 */
export const CAP_FIELDS = [
  ...REPORTED_CAP_FIELDS,
  'rollingWithdrawalCapShare',
  ...MINT_FIELDS,
] as const satisfies ReadonlyArray<keyof Caps>;

/** The most a share may be: 10,000 basis points, the whole total. */
const MAX_SHARE = 10_000n;

/** Caps with every field unset. */
export const NO_CAPS: Caps = {
  pegCap: null,
  perDepositCap: null,
  perDepositMinimum: null,
  perWithdrawalCap: null,
  rollingWithdrawalBlocks: null,
  rollingWithdrawalCap: null,
  rollingWithdrawalCapShare: null,
  rollingMintBlocks: null,
  rollingMintCap: null,
  rollingMintCapShare: null,
};

/** True when every field is unset (such an account entry does not exist). */
export function isEmptyCaps(caps: Caps): boolean {
  return CAP_FIELDS.every((f) => caps[f] === null);
}

/** True when `value` is a plain object (not null, not an array, not a Map). */
export function isRecord(value: unknown): value is Readonly<Record<string, unknown>> {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Map)
  );
}

/**
 * Validates caps against the rules of caps (the README, "Error codes"). Throws a LimitsError, caught at the public boundary.
 *
 * @param allowed - extra field names the caller handles itself (e.g. `accountCaps`)
 */
export function requireCaps(
  input: unknown,
  path: string,
  historyBlocks: number,
  allowed: ReadonlyArray<string> = [],
): Caps {
  if (!isRecord(input))
    fail('invalid_event', `expected an object of limits, got ${describe(input)}`, path);
  rejectUnknownFields(input, CAP_FIELDS, path, allowed);
  const out: Record<string, Amount | null> = {};
  for (const f of CAP_FIELDS) {
    const v = input[f];
    out[f] = v === undefined || v === null ? null : requireCap(v, joinPath(path, f));
  }
  const caps = out as unknown as Caps;
  requireCapRules(caps, path, historyBlocks);
  return caps;
}

/** Throws `unknown_field` for a key of `input` that is neither in `fields` nor `allowed`. */
export function rejectUnknownFields(
  input: Readonly<Record<string, unknown>>,
  fields: ReadonlyArray<string>,
  path: string,
  allowed: ReadonlyArray<string> = [],
): void {
  for (const key of Object.keys(input)) {
    if (!fields.includes(key) && !allowed.includes(key)) {
      fail(
        'unknown_field',
        `unknown field; expected one of ${fields.join(', ')}`,
        joinPath(path, key),
      );
    }
  }
}

/** The cross-field rules of caps whose fields are already valid amounts. */
export function requireCapRules(caps: Caps, path: string, historyBlocks: number): void {
  requireWindowRules(
    caps.rollingWithdrawalBlocks,
    caps.rollingWithdrawalCap,
    caps.rollingWithdrawalCapShare,
    ['rollingWithdrawalBlocks', 'rollingWithdrawalCap', 'rollingWithdrawalCapShare'],
    path,
    historyBlocks,
  );
  requireWindowRules(
    caps.rollingMintBlocks,
    caps.rollingMintCap,
    caps.rollingMintCapShare,
    MINT_FIELDS,
    path,
    historyBlocks,
  );
  if (
    caps.perDepositMinimum !== null &&
    caps.perDepositCap !== null &&
    caps.perDepositMinimum > caps.perDepositCap
  ) {
    fail(
      'minimum_above_cap',
      `perDepositMinimum ${caps.perDepositMinimum} is above perDepositCap ${caps.perDepositCap}`,
      joinPath(path, 'perDepositMinimum'),
    );
  }
}

// The rules of one window (the withdrawal window's or the mint window's): its length and cap
// set together, a length of 1 to the retained history, a share of 1 to 10,000 basis points
// that needs the window.
function requireWindowRules(
  blocks: Amount | null,
  cap: Amount | null,
  share: Amount | null,
  names: readonly [string, string, string],
  path: string,
  historyBlocks: number,
): void {
  const [blocksName, capName, shareName] = names;
  if ((blocks === null) !== (cap === null)) {
    fail(
      'incomplete_rolling_window',
      `${blocksName} and ${capName} must be both set or both null`,
      joinPath(path, blocks === null ? blocksName : capName),
    );
  }
  if (blocks !== null) {
    if (blocks < 1n) {
      fail(
        'invalid_amount',
        `${blocksName} must be at least 1, got ${blocks}`,
        joinPath(path, blocksName),
      );
    }
    if (blocks > BigInt(historyBlocks)) {
      fail(
        'window_exceeds_history',
        `${blocksName} ${blocks} exceeds the ${historyBlocks} blocks of retained history`,
        joinPath(path, blocksName),
      );
    }
  }
  if (share !== null) {
    if (share < 1n || share > MAX_SHARE)
      fail(
        'invalid_share',
        `${shareName} is in basis points of the pegged total, 1 to ${MAX_SHARE} (100%), got ${share}`,
        joinPath(path, shareName),
      );
    if (blocks === null)
      fail(
        'incomplete_rolling_window',
        `${shareName} needs a window to apply to: set ${blocksName} and ${capName} too`,
        joinPath(path, shareName),
      );
  }
}

/** Iterates the entries of an `accountCaps` input (a plain object or a Map). */
function accountCapsEntries(value: unknown, path: string): Array<[string, unknown]> {
  if (value instanceof Map) {
    const out: Array<[string, unknown]> = [];
    for (const [k, v] of value) {
      if (typeof k !== 'string')
        fail('invalid_account', `account names must be strings, got ${describe(k)}`, path);
      out.push([k, v]);
    }
    return out;
  }
  if (!isRecord(value))
    fail('invalid_event', `expected an object of account entries, got ${describe(value)}`, path);
  return Object.keys(value).map((k) => [k, value[k]]);
}

/**
 * Calls `fn` with each entry of the `accountCaps` of a limits object at `path` (a plain object
 * or a Map), its account name checked (`invalid_account`) and the entry's path
 * (`limits.accountCaps.alice`). The one walk over account entries every rule shares.
 */
export function forEachAccountEntry(
  accountCaps: unknown,
  path: string,
  fn: (account: string, entry: unknown, entryPath: string) => void,
): void {
  const at = joinPath(path, 'accountCaps');
  for (const [account, entry] of accountCapsEntries(accountCaps, at)) {
    const entryPath = joinPath(at, account);
    requireAccount(account, entryPath);
    fn(account, entry, entryPath);
  }
}

/**
 * The limits that apply to one account, with the account fallback resolved (the README, "Account fallback").
 * The global window and peg cap apply to every account; an entry's own window and peg cap
 * apply on top, counting that account alone.
 */
export interface ResolvedCaps {
  readonly pegCap: Amount | null;
  readonly accountPegCap: Amount | null;
  readonly perDepositCap: Amount | null;
  readonly perDepositMinimum: Amount | null;
  readonly perWithdrawalCap: Amount | null;
  readonly rollingWithdrawalBlocks: Amount | null;
  readonly rollingWithdrawalCap: Amount | null;
  /** The global window cap's share of the pegged total (basis points), when set. */
  readonly rollingWithdrawalCapShare: Amount | null;
  readonly accountRollingWithdrawalBlocks: Amount | null;
  readonly accountRollingWithdrawalCap: Amount | null;
  /** The entry's window cap's share of the account's pegged total (basis points), when set. */
  readonly accountRollingWithdrawalCapShare: Amount | null;
  /** The global mint window: its length, its cap and the cap's share, when set. */
  readonly rollingMintBlocks: Amount | null;
  readonly rollingMintCap: Amount | null;
  readonly rollingMintCapShare: Amount | null;
  /** The entry's own mint window (that account's mints), when it sets one. */
  readonly accountRollingMintBlocks: Amount | null;
  readonly accountRollingMintCap: Amount | null;
  readonly accountRollingMintCapShare: Amount | null;
}

/**
 * Resolves the fallback: an entry's per-deposit and per-withdrawal caps fall back to the
 * global ones, its minimum does not (null = no minimum); without an entry the global
 * values apply.
 */
export function resolveCaps(global: Caps, entry: Caps | undefined): ResolvedCaps {
  return {
    pegCap: global.pegCap,
    accountPegCap: entry === undefined ? null : entry.pegCap,
    perDepositCap: entry?.perDepositCap ?? global.perDepositCap,
    perDepositMinimum: entry === undefined ? global.perDepositMinimum : entry.perDepositMinimum,
    perWithdrawalCap: entry?.perWithdrawalCap ?? global.perWithdrawalCap,
    rollingWithdrawalBlocks: global.rollingWithdrawalBlocks,
    rollingWithdrawalCap: global.rollingWithdrawalCap,
    rollingWithdrawalCapShare: global.rollingWithdrawalCapShare,
    accountRollingWithdrawalBlocks: entry === undefined ? null : entry.rollingWithdrawalBlocks,
    accountRollingWithdrawalCap: entry === undefined ? null : entry.rollingWithdrawalCap,
    accountRollingWithdrawalCapShare: entry === undefined ? null : entry.rollingWithdrawalCapShare,
    rollingMintBlocks: global.rollingMintBlocks,
    rollingMintCap: global.rollingMintCap,
    rollingMintCapShare: global.rollingMintCapShare,
    accountRollingMintBlocks: entry === undefined ? null : entry.rollingMintBlocks,
    accountRollingMintCap: entry === undefined ? null : entry.rollingMintCap,
    accountRollingMintCapShare: entry === undefined ? null : entry.rollingMintCapShare,
  };
}

/** The longest account name or withdrawal id, in UTF-16 code units. */
export const MAX_NAME_LENGTH = 256;

// Whether any UTF-16 code unit is a C0 control, DEL or a C1 control. A loop, not a regular
// expression: every withdrawal of a replay names an account, and the call into the regular
// expression cost more than the check.
function hasControl(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c <= 0x1f || (c >= 0x7f && c <= 0x9f)) return true;
  }
  return false;
}

/** True for a valid account name: 1 to 256 characters, none of them a control character. */
export function isAccountName(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length > 0 &&
    value.length <= MAX_NAME_LENGTH &&
    !hasControl(value)
  );
}

/**
 * Validates a name by the rules of account names (throws, caught at the boundary).
 *
 * @param code - the error code to throw (`invalid_account`, `invalid_key_name`)
 * @param noun - what the name names, for the message
 */
export function requireName(
  value: unknown,
  path: string,
  code: LimitsErrorCode = 'invalid_account',
  noun = 'an account name',
): string {
  if (!isAccountName(value)) {
    fail(
      code,
      `expected ${noun} of 1 to ${MAX_NAME_LENGTH} characters without control characters, got ${describe(value)}`,
      path,
    );
  }
  return value;
}

/** Validates an account name (throws `invalid_account`, caught at the boundary). */
export function requireAccount(value: unknown, path: string): string {
  return requireName(value, path);
}
