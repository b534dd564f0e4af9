/**
 * The state and its events: `createLimitsState`, `apply`, `applyAll` (SPEC §2).
 *
 * A state is an immutable value. Every event handler works on a private draft whose
 * persistent structures are updated with a fresh owner token, so nodes made during one
 * `apply`/`applyAll` may be changed in place while every earlier state stays untouched.
 */
import { type Amount, requireCap, requirePositive } from './amount.js';
import { describe, fail, joinPath, LimitsError } from './errors.js';
import { isSecretHash } from './keys.js';
import {
  accountCapsEntries,
  type Caps,
  type CapsInput,
  checkCaps,
  isEmptyCaps,
  isRecord,
  type LimitsConfig,
  MAX_NAME_LENGTH,
  NO_CAPS,
  rejectUnknownFields,
  requireAccount,
  requireName,
  validateCaps,
} from './limits.js';
import { emptyMap, mapDelete, mapGet, mapSet, type Owner, type PMap } from './pmap.js';
import { addAt, clearHeights, type Ring, ringOf, type SumNode, visitHeights } from './window.js';

/** Block height: a non-negative safe integer. */
export type Height = number;

/**
 * The caps that throttle mode imposes (SPEC §3). Defaults are those of the sBTC bridge:
 * 1.5 BTC per withdrawal, at most 2 BTC in any 18 blocks.
 */
export interface ThrottleProfile {
  readonly perWithdrawalCap: Amount;
  readonly rollingWithdrawalBlocks: Amount;
  readonly rollingWithdrawalCap: Amount;
}

/** The default throttle profile. */
export const DEFAULT_THROTTLE_PROFILE: ThrottleProfile = {
  perWithdrawalCap: 150_000_000n,
  rollingWithdrawalBlocks: 18n,
  rollingWithdrawalCap: 200_000_000n,
};

/** The default number of blocks of retained history (two weeks of Bitcoin blocks). */
export const DEFAULT_HISTORY_BLOCKS = 2016;

/** A registered throttle key: its name, the salted hash of its secret, whether revoked. */
export interface ThrottleKey {
  readonly name: string;
  readonly secretHash: string;
  readonly revoked: boolean;
}

/** A withdrawal the state holds (one requested inside the retained history). */
export interface Withdrawal {
  readonly id: string;
  readonly account: string;
  readonly amount: Amount;
  readonly height: Height;
  readonly rejected: boolean;
}

/**
 * The state of the limits: configuration, chain tip, retained withdrawals, throttle mode.
 * An immutable value: read it through the views (`getLimits`, `effectiveLimits`, …) and
 * change it only through {@link apply}.
 */
export interface LimitsState {
  /** How many heights of per-block data are kept, up to the highest tip seen. */
  readonly historyBlocks: number;
  /** The current tip, or `null` before any block is known. */
  readonly tip: Height | null;
  /** The highest tip ever seen (a reorg lowers `tip`, not this). */
  readonly highestTip: Height | null;
  /** The configured global caps (without the throttle overlay). */
  readonly limits: Caps;
  /** The configured account entries (without the throttle overlay). */
  readonly entries: PMap<Caps>;
  /** The global pegged-in total last observed. */
  readonly peggedTotal: Amount;
  /** The caps throttle mode imposes. */
  readonly throttleProfile: ThrottleProfile;
  /** The name of the key that started throttle mode, or `null` when it is not active. */
  readonly throttleInitiator: string | null;
  /** The throttle key registry. */
  readonly throttleKeys: PMap<ThrottleKey>;
  /** @internal The ring of per-block sums of all accounts, with the ids listed per height. */
  readonly ring: Ring;
  /** @internal */
  readonly window: SumNode;
  /** @internal Withdrawals by id. */
  readonly withdrawals: PMap<Withdrawal>;
  /** @internal Each account's own per-block sums (accounts with withdrawals held). */
  readonly accountWindows: PMap<SumNode>;
  /** @internal Each account's pegged-in total last observed (absent = 0). */
  readonly accountPegged: PMap<Amount>;
}

/** Every event of SPEC §2. Amounts are bigint, heights are numbers. */
export type LimitsEvent =
  | { readonly type: 'limitsSet'; readonly limits: LimitsConfig }
  | { readonly type: 'accountLimitsSet'; readonly account: string; readonly limits: CapsInput }
  | { readonly type: 'blockConnected'; readonly height: Height }
  | { readonly type: 'chainReorganized'; readonly height: Height }
  | {
      readonly type: 'withdrawalRequested';
      readonly id: string;
      readonly account: string;
      readonly amount: Amount;
      readonly height: Height;
    }
  | { readonly type: 'withdrawalRejected'; readonly id: string }
  | {
      readonly type: 'peggedTotalObserved';
      readonly total: Amount;
      readonly account?: string | undefined;
    }
  | { readonly type: 'throttleKeyAdded'; readonly name: string; readonly secretHash: string }
  | { readonly type: 'throttleKeyRevoked'; readonly name: string }
  | { readonly type: 'throttleKeyReactivated'; readonly name: string }
  | { readonly type: 'throttleStarted'; readonly initiator: string }
  | { readonly type: 'throttleEnded' };

/** The result of {@link apply} and {@link applyAll}. */
export type ApplyResult =
  | { readonly ok: true; readonly state: LimitsState }
  | { readonly ok: false; readonly error: LimitsError };

/** Options of {@link createLimitsState}. */
export interface LimitsOptions {
  /** The initial caps and account entries (all unset when absent). */
  readonly limits?: LimitsConfig | undefined;
  /** Heights of per-block data kept (default 2016); every window must fit. */
  readonly historyBlocks?: number | undefined;
  /** The caps throttle mode imposes (default: the sBTC bridge's). */
  readonly throttleProfile?: ThrottleProfile | undefined;
}

/** The mutable working copy one `apply`/`applyAll` call changes; never escapes. */
type Draft = { -readonly [K in keyof LimitsState]: LimitsState[K] } & {
  /**
   * Withdrawals added, changed or removed (REMOVED) during this call, written into the
   * persistent map once at the end: a withdrawal added and forgotten within one batch
   * never touches it, and lookups cost a hash-table probe.
   */
  pending: Map<string, Withdrawal | typeof REMOVED>;
  /** Account windows touched during this call, likewise written back at the end. */
  windows: Map<string, SumNode>;
  owner: Owner;
  changed: boolean;
};

function requireHeight(value: unknown, path: string): Height {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    fail(
      'invalid_height',
      `expected a block height (a non-negative safe integer), got ${describe(value)}`,
      path,
    );
  }
  return value;
}

function requireId(value: unknown, path: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_NAME_LENGTH) {
    fail(
      'invalid_withdrawal_id',
      `expected a withdrawal id of 1 to ${MAX_NAME_LENGTH} characters, got ${describe(value)}`,
      path,
    );
  }
  return value;
}

/** Validates a throttle profile against the history (SPEC §3). Throws a LimitsError. */
function validateProfile(value: unknown, historyBlocks: number, path: string): ThrottleProfile {
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
  checkCaps({ ...NO_CAPS, ...profile }, path, historyBlocks);
  return profile;
}

/**
 * Creates a state: no block known, nothing withdrawn, throttle mode off, no keys.
 *
 * @throws LimitsError with code `invalid_option` (or the code of the failing cap rule)
 *   when the options break the spec; this is a set-up error, not data
 * @example
 * ```ts
 * const state = createLimitsState({
 *   limits: { rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: 10_00000000n },
 * });
 * getLimits(state).availableToWithdraw; // 1000000000n
 * ```
 */
export function createLimitsState(options: LimitsOptions = {}): LimitsState {
  if (!isRecord(options as unknown))
    throw new LimitsError(
      'invalid_option',
      `options: expected an object, got ${describe(options)}`,
    );
  const historyBlocks = options.historyBlocks ?? DEFAULT_HISTORY_BLOCKS;
  if (!Number.isSafeInteger(historyBlocks) || historyBlocks < 1 || historyBlocks > 1_000_000) {
    throw new LimitsError(
      'invalid_option',
      `historyBlocks: expected an integer from 1 to 1000000, got ${describe(historyBlocks)}`,
      'historyBlocks',
    );
  }
  const ring = ringOf(historyBlocks);
  const base: LimitsState = {
    historyBlocks,
    tip: null,
    highestTip: null,
    limits: NO_CAPS,
    entries: emptyMap(),
    peggedTotal: 0n,
    throttleProfile: DEFAULT_THROTTLE_PROFILE,
    throttleInitiator: null,
    throttleKeys: emptyMap(),
    ring,
    window: ring.empty,
    withdrawals: emptyMap(),
    accountWindows: emptyMap(),
    accountPegged: emptyMap(),
  };
  const draft = draftOf(base);
  try {
    if (options.throttleProfile !== undefined) {
      draft.throttleProfile = validateProfile(
        options.throttleProfile,
        historyBlocks,
        'throttleProfile',
      );
    } else {
      validateProfile(DEFAULT_THROTTLE_PROFILE, historyBlocks, 'throttleProfile');
    }
    if (options.limits !== undefined) setLimits(draft, options.limits, 'limits');
  } catch (e) {
    throw e instanceof LimitsError && e.code === 'invalid_event'
      ? new LimitsError('invalid_option', e.message, e.path)
      : e;
  }
  return freeze(draft);
}

const REMOVED = Symbol('removed');

// Written out field by field: a spread with extra fields is several times slower here.
function draftOf(state: LimitsState): Draft {
  return {
    historyBlocks: state.historyBlocks,
    tip: state.tip,
    highestTip: state.highestTip,
    limits: state.limits,
    entries: state.entries,
    peggedTotal: state.peggedTotal,
    throttleProfile: state.throttleProfile,
    throttleInitiator: state.throttleInitiator,
    throttleKeys: state.throttleKeys,
    ring: state.ring,
    window: state.window,
    withdrawals: state.withdrawals,
    accountWindows: state.accountWindows,
    accountPegged: state.accountPegged,
    owner: {},
    changed: false,
    pending: new Map(),
    windows: new Map(),
  };
}

function getWithdrawal(d: Draft, id: string): Withdrawal | undefined {
  const p = d.pending.get(id);
  if (p !== undefined) return p === REMOVED ? undefined : p;
  return mapGet(d.withdrawals, id);
}

function freeze(d: Draft): LimitsState {
  for (const [id, w] of d.pending) {
    d.withdrawals =
      w === REMOVED ? mapDelete(d.withdrawals, id, d.owner) : mapSet(d.withdrawals, id, w, d.owner);
  }
  for (const [account, window] of d.windows) {
    d.accountWindows =
      window.count === 0
        ? mapDelete(d.accountWindows, account, d.owner)
        : mapSet(d.accountWindows, account, window, d.owner);
  }
  return {
    historyBlocks: d.historyBlocks,
    tip: d.tip,
    highestTip: d.highestTip,
    limits: d.limits,
    entries: d.entries,
    peggedTotal: d.peggedTotal,
    throttleProfile: d.throttleProfile,
    throttleInitiator: d.throttleInitiator,
    throttleKeys: d.throttleKeys,
    ring: d.ring,
    window: d.window,
    withdrawals: d.withdrawals,
    accountWindows: d.accountWindows,
    accountPegged: d.accountPegged,
  };
}

// ---------------------------------------------------------------------------------------
// Handlers: each validates, then changes the draft; a LimitsError thrown anywhere discards
// the whole draft, so the input state is never touched.

function setLimits(d: Draft, input: unknown, path: string): void {
  const caps = validateCaps(input, path, d.historyBlocks, ['accountCaps']);
  const accountCaps = (input as LimitsConfig).accountCaps;
  const updates: Array<[string, Caps]> = [];
  if (accountCaps !== undefined) {
    const at = joinPath(path, 'accountCaps');
    for (const [account, entry] of accountCapsEntries(accountCaps, at)) {
      const entryPath = joinPath(at, account);
      requireAccount(account, entryPath);
      updates.push([account, validateCaps(entry, entryPath, d.historyBlocks)]);
    }
  }
  d.limits = caps;
  for (const [account, entry] of updates) setEntry(d, account, entry);
  // An operator setting the caps overrides throttle mode (SPEC §3).
  d.throttleInitiator = null;
  d.changed = true;
}

function setEntry(d: Draft, account: string, caps: Caps): void {
  d.entries = isEmptyCaps(caps)
    ? mapDelete(d.entries, account, d.owner)
    : mapSet(d.entries, account, caps, d.owner);
  d.changed = true;
}

function bookAdd(d: Draft, account: string, height: Height, delta: bigint, count: number): void {
  // An account whose withdrawals are all gone or rejected keeps no window (see freeze).
  const before = d.windows.get(account) ?? mapGet(d.accountWindows, account) ?? d.ring.empty;
  const after = addAt(d.ring, before, height, delta, count, undefined, d.owner);
  // A root this call already owned changed in place: the cache holds it already.
  if (after !== before) d.windows.set(account, after);
}

// Removes every withdrawal at heights from..to: from the id map, the account books and the ring.
function dropHeights(d: Draft, from: Height, to: Height): void {
  if (from > to) return;
  visitHeights(d.ring, d.window, from, to, (id) => {
    const touched = d.pending.get(id);
    if (touched === REMOVED) return;
    const stored = touched === undefined ? mapGet(d.withdrawals, id) : undefined;
    const w = touched ?? stored;
    if (w === undefined || w.height < from || w.height > to) return;
    // Only a withdrawal the persistent map holds needs a tombstone; one added during this
    // call never reached it.
    if (stored !== undefined || mapGet(d.withdrawals, id) !== undefined) d.pending.set(id, REMOVED);
    else d.pending.delete(id);
    if (!w.rejected) bookAdd(d, w.account, w.height, -w.amount, -1);
  });
  d.window = clearHeights(d.ring, d.window, from, to, d.owner);
  d.changed = true;
}

function blockConnected(d: Draft, e: Record<string, unknown>): void {
  const height = requireHeight(e.height, 'height');
  if (d.tip !== null && height <= d.tip) {
    fail(
      'height_not_above_tip',
      `a connected block must be above the tip ${d.tip}, got ${height}`,
      'height',
    );
  }
  if (d.highestTip !== null && height > d.highestTip) {
    // Heights that fall out of the retained history are forgotten.
    dropHeights(d, Math.max(0, d.highestTip - d.historyBlocks + 1), height - d.historyBlocks);
  }
  d.tip = height;
  d.highestTip = d.highestTip === null ? height : Math.max(d.highestTip, height);
  d.changed = true;
}

function chainReorganized(d: Draft, e: Record<string, unknown>): void {
  const height = requireHeight(e.height, 'height');
  if (d.tip === null || height >= d.tip) {
    fail(
      'height_not_below_tip',
      d.tip === null
        ? 'no block is known yet, so there is nothing to reorganize'
        : `a reorganization must go below the tip ${d.tip}, got ${height}`,
      'height',
    );
  }
  const oldest = oldestRetained(d);
  if (height < oldest) {
    fail(
      'reorg_too_deep',
      `height ${height} is below the retained history (${oldest}…${d.highestTip}); raise historyBlocks to allow deeper reorganizations`,
      'height',
    );
  }
  dropHeights(d, height + 1, d.tip);
  d.tip = height;
}

/** The oldest height whose data the state still holds (0 before the history fills up). */
function oldestRetained(s: Pick<LimitsState, 'highestTip' | 'historyBlocks'>): Height {
  return s.highestTip === null ? 0 : Math.max(0, s.highestTip - s.historyBlocks + 1);
}

function withdrawalRequested(d: Draft, e: Record<string, unknown>): void {
  const id = requireId(e.id, 'id');
  const account = requireAccount(e.account, 'account');
  const amount = requirePositive(e.amount, 'amount');
  const height = requireHeight(e.height, 'height');
  if (d.tip === null || height > d.tip) {
    fail(
      'height_ahead_of_tip',
      d.tip === null ? 'no block is known yet' : `height ${height} is above the tip ${d.tip}`,
      'height',
    );
  }
  const known = getWithdrawal(d, id);
  if (known !== undefined) {
    if (known.account === account && known.amount === amount && known.height === height) return;
    fail(
      'duplicate_withdrawal',
      `withdrawal "${id}" is already known with another payload (account ${JSON.stringify(known.account)}, amount ${known.amount}, height ${known.height})`,
      'id',
    );
  }
  // Older than the retained history: accepted, counted nowhere (SPEC §2).
  if (height < oldestRetained(d)) return;
  d.pending.set(id, { id, account, amount, height, rejected: false });
  d.window = addAt(d.ring, d.window, height, amount, 1, id, d.owner);
  bookAdd(d, account, height, amount, 1);
  d.changed = true;
}

function withdrawalRejected(d: Draft, e: Record<string, unknown>): void {
  const id = requireId(e.id, 'id');
  const w = getWithdrawal(d, id);
  if (w === undefined) {
    fail(
      'unknown_withdrawal',
      `no withdrawal "${id}" is held (never requested, dropped by a reorganization, or older than the history)`,
      'id',
    );
  }
  if (w.rejected) return;
  d.pending.set(id, { ...w, rejected: true });
  d.window = addAt(d.ring, d.window, w.height, -w.amount, 0, undefined, d.owner);
  bookAdd(d, w.account, w.height, -w.amount, -1);
  d.changed = true;
}

function peggedTotalObserved(d: Draft, e: Record<string, unknown>): void {
  const total = requireCap(e.total, 'total');
  if (e.account === undefined) {
    if (d.peggedTotal !== total) d.changed = true;
    d.peggedTotal = total;
    return;
  }
  const account = requireAccount(e.account, 'account');
  if ((mapGet(d.accountPegged, account) ?? 0n) === total) return;
  d.accountPegged =
    total === 0n
      ? mapDelete(d.accountPegged, account, d.owner)
      : mapSet(d.accountPegged, account, total, d.owner);
  d.changed = true;
}

function accountLimitsSet(d: Draft, e: Record<string, unknown>): void {
  const account = requireAccount(e.account, 'account');
  setEntry(d, account, validateCaps(e.limits, 'limits', d.historyBlocks));
}

// The throttle key registry and throttle mode (SPEC §3).

function requireKeyName(value: unknown, path: string): string {
  return requireName(value, path, 'invalid_key_name', 'a key name');
}

function requireKey(d: Draft, name: string): ThrottleKey {
  const key = mapGet(d.throttleKeys, name);
  if (key === undefined)
    fail('unknown_key', `no throttle key is named ${JSON.stringify(name)}`, 'name');
  return key;
}

/** `throttleKeyAdded`: registers a key by name and secret hash; a name that exists is refused. */
function throttleKeyAdded(d: Draft, e: Record<string, unknown>): void {
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

/** `throttleKeyRevoked` / `throttleKeyReactivated`: a no-op when the key is already so. */
function throttleKeyRevocation(revoked: boolean): (d: Draft, e: Record<string, unknown>) => void {
  return (d, e) => {
    const key = requireKey(d, requireKeyName(e.name, 'name'));
    if (key.revoked === revoked) return;
    d.throttleKeys = mapSet(d.throttleKeys, key.name, { ...key, revoked }, d.owner);
    d.changed = true;
  };
}

/** `throttleStarted`: turns the overlay on; while active, nothing changes and the first initiator stays. */
function throttleStarted(d: Draft, e: Record<string, unknown>): void {
  const initiator = requireKeyName(e.initiator, 'initiator');
  if (d.throttleInitiator !== null) return;
  d.throttleInitiator = initiator;
  d.changed = true;
}

/** `throttleEnded`: removes the overlay; a no-op when throttle mode is not active. */
function throttleEnded(d: Draft): void {
  if (d.throttleInitiator === null) return;
  d.throttleInitiator = null;
  d.changed = true;
}

type EventHandler = (d: Draft, e: Record<string, unknown>) => void;

const handlers = new Map<string, EventHandler>([
  ['limitsSet', (d, e) => setLimits(d, e.limits, 'limits')],
  ['accountLimitsSet', accountLimitsSet],
  ['blockConnected', blockConnected],
  ['chainReorganized', chainReorganized],
  ['withdrawalRequested', withdrawalRequested],
  ['withdrawalRejected', withdrawalRejected],
  ['peggedTotalObserved', peggedTotalObserved],
  ['throttleKeyAdded', throttleKeyAdded],
  ['throttleKeyRevoked', throttleKeyRevocation(true)],
  ['throttleKeyReactivated', throttleKeyRevocation(false)],
  ['throttleStarted', throttleStarted],
  ['throttleEnded', throttleEnded],
]);

function step(d: Draft, value: unknown): void {
  const event = value as Record<string, unknown>;
  if (typeof value !== 'object' || value === null || typeof event.type !== 'string') {
    fail(
      'invalid_event',
      `expected an event object with a string "type", got ${describe(event)}`,
      'type',
    );
  }
  const handler = handlers.get(event.type);
  if (handler === undefined)
    fail('invalid_event', `unknown event type ${describe(event.type)}`, 'type');
  handler(d, event);
}

function withIndex(error: LimitsError, index: number): LimitsError {
  const path = error.path === undefined ? `[${index}]` : `[${index}].${error.path}`;
  return new LimitsError(error.code, `event ${index}: ${error.message}`, path);
}

function run(state: LimitsState, events: Iterable<unknown>, indexed: boolean): ApplyResult {
  const d = draftOf(state);
  let index = 0;
  try {
    for (const event of events) {
      try {
        step(d, event);
      } catch (e) {
        if (e instanceof LimitsError && indexed) throw withIndex(e, index);
        throw e;
      }
      index++;
    }
  } catch (e) {
    if (e instanceof LimitsError) return { ok: false, error: e };
    const message = e instanceof Error ? e.message : String(e);
    return {
      ok: false,
      error: new LimitsError('invalid_event', `could not read the event: ${message}`),
    };
  }
  return { ok: true, state: d.changed ? freeze(d) : state };
}

/**
 * Applies one event, returning the new state or an error; never changes `state`.
 * An event that changes nothing (a repeated withdrawal, a second rejection) returns the
 * same state object.
 *
 * @example
 * ```ts
 * const r = apply(state, { type: 'blockConnected', height: 840000 });
 * if (r.ok) state = r.state; else console.error(r.error.code, r.error.message);
 * ```
 */
export function apply(state: LimitsState, event: LimitsEvent): ApplyResult {
  return run(state, [event], false);
}

/**
 * Applies events in order, all or nothing: the first invalid event's error (its path
 * prefixed with its index, `[3].amount`) and no change, or the state after all of them.
 * Equal to folding {@link apply}, but works on one private copy, so a replay costs about
 * what plain mutable structures would.
 *
 * @example
 * ```ts
 * const r = applyAll(state, [
 *   { type: 'blockConnected', height: 100 },
 *   { type: 'withdrawalRequested', id: 'w1', account: 'alice', amount: 5000n, height: 100 },
 * ]);
 * ```
 */
export function applyAll(state: LimitsState, events: Iterable<LimitsEvent>): ApplyResult {
  return run(state, events, true);
}

/** The oldest height with retained data, for the views. @internal */
export { oldestRetained };
