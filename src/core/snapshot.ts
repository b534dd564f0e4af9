/**
 * Snapshots (docs/design.md, "Snapshots"): the state as plain, JSON-safe data, and back. A snapshot holds what
 * the state knows and nothing of how it got there, so its size follows the retained
 * history, never the number of events seen.
 */

import { type Amount, requireCap, requirePositive } from './amount.js';
import { requireId } from './chain.js';
import { restoreChange } from './changes.js';
import { asState, draftOf, stateFieldsOf } from './draft.js';
import { describe, joinPath, LimitsError, PegLimitsError, type Result } from './errors.js';
import type { PendingChange } from './events.js';
import { heightFromJson, requireHeight } from './heights.js';
import { isSecretHash } from './keys.js';
import {
  CAP_FIELDS,
  type Caps,
  isRecord,
  REPORTED_CAP_FIELDS,
  rejectUnknownFields,
  requireAccount,
} from './limits.js';
import { mapForEach, mapWalk } from './pmap.js';
import { snapshotAmounts } from './snapshot-json.js';
import {
  applyAll,
  createLimitsState,
  type Height,
  type LimitsEvent,
  type LimitsState,
  type ThrottleKey,
  type ThrottleProfile,
  type Withdrawal,
} from './state.js';
import { requireKeyName } from './throttle.js';
import { forEachWithdrawal, withdrawalWalk } from './withdrawals.js';

/** The `format` every snapshot carries. */
export const SNAPSHOT_FORMAT = 'peg-limits/snapshot';
/**
 * The snapshot version this release writes. It reads this one, version 4 (written before a
 * window cap could be a share of the total: its caps hold none), version 3 (besides, written
 * before a feed could hold blocks: none held), version 2 (besides, amounts as integers, to
 * be read with `decodeJson`; written before a history could start late: complete from the
 * start) and version 1 (besides, written before pending changes existed: it holds none).
 */
export const SNAPSHOT_VERSION = 5;

/** An amount in a snapshot: its decimal digits, which JSON keeps, every one of them. */
export type AmountText = string;

/** Caps in a snapshot: each one's decimal digits, or `null` when unset. */
export type SnapshotCaps = { readonly [K in keyof Caps]: AmountText | null };

/** A withdrawal in a snapshot (its amount as decimal digits). */
export interface SnapshotWithdrawal {
  readonly id: string;
  readonly account: string;
  readonly amount: AmountText;
  readonly height: Height;
  readonly rejected: boolean;
}

/** The throttle profile in a snapshot. */
export type SnapshotProfile = { readonly [K in keyof ThrottleProfile]: AmountText };

/** A pending change in a snapshot: its events with every amount as decimal digits. */
export type SnapshotChange = Omit<PendingChange, 'events'> & {
  readonly events: ReadonlyArray<Readonly<Record<string, unknown>>>;
};

/**
 * Everything a state knows, as plain JSON: amounts are decimal strings (so that
 * `JSON.stringify` and `JSON.parse` keep them exact, as `encodeJson` does), heights are
 * numbers, maps are objects sorted by key and lists are sorted, so equal states give equal
 * text.
 */
export interface Snapshot {
  readonly format: typeof SNAPSHOT_FORMAT;
  readonly version: typeof SNAPSHOT_VERSION;
  readonly historyBlocks: number;
  readonly throttleProfile: SnapshotProfile;
  /** The configured global caps (without the throttle overlay), all six fields. */
  readonly limits: SnapshotCaps;
  /** The configured account entries, by account name. */
  readonly accountCaps: Readonly<Record<string, SnapshotCaps>>;
  readonly tip: Height | null;
  readonly highestTip: Height | null;
  /** The height from which the history is complete (`historyCompleteFrom`); null: from the start. */
  readonly historyCompleteFrom: Height | null;
  /** The burn height from which a feed holds blocks past the chain bounds (`blocksHeld`); null: none held. */
  readonly blocksHeldFrom: Height | null;
  readonly peggedTotal: AmountText;
  /** The pegged-in totals observed per account (0 is left out). */
  readonly accountPeggedTotals: Readonly<Record<string, AmountText>>;
  /** The key registry, sorted by name. */
  readonly throttleKeys: ReadonlyArray<ThrottleKey>;
  readonly throttleInitiator: string | null;
  /** The withdrawals held (inside the history), sorted by height, then id. */
  readonly withdrawals: ReadonlyArray<SnapshotWithdrawal>;
  /** The pending changes, by id. */
  readonly changes: ReadonlyArray<SnapshotChange>;
  /** The id the next pending change gets. */
  readonly nextChangeId: number;
}

const TOP_FIELDS = [
  'format',
  'version',
  'historyBlocks',
  'throttleProfile',
  'limits',
  'accountCaps',
  'tip',
  'highestTip',
  'historyCompleteFrom',
  'blocksHeldFrom',
  'peggedTotal',
  'accountPeggedTotals',
  'throttleKeys',
  'throttleInitiator',
  'withdrawals',
  'changes',
  'nextChangeId',
];
// What version 3 lacks, version 2 besides, and version 1 besides.
const V3_FIELDS = TOP_FIELDS.filter((f) => f !== 'blocksHeldFrom');
const V2_FIELDS = V3_FIELDS.filter((f) => f !== 'historyCompleteFrom');
const V1_FIELDS = V2_FIELDS.filter((f) => f !== 'changes' && f !== 'nextChangeId');
const WITHDRAWAL_FIELDS = ['id', 'account', 'amount', 'height', 'rejected'];
const KEY_FIELDS = ['name', 'secretHash', 'revoked'];
const PROFILE_FIELDS = ['perWithdrawalCap', 'rollingWithdrawalBlocks', 'rollingWithdrawalCap'];

function byKey(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function capsOf(caps: Caps): SnapshotCaps {
  const out: Record<string, AmountText | null> = {};
  for (const f of CAP_FIELDS) {
    const v = caps[f];
    out[f] = v === null ? null : v.toString();
  }
  return out as unknown as SnapshotCaps;
}

// Every bigint of an event (its amounts) as decimal digits, for a pending change.
function textEvent(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return value.map(textEvent);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = textEvent(v);
    return out;
  }
  return value;
}

function sortedRecord<V>(pairs: Array<[string, V]>): Record<string, V> {
  const out: Record<string, V> = Object.create(null);
  for (const [k, v] of pairs.sort(([a], [b]) => byKey(a, b))) out[k] = v;
  return out;
}

/**
 * The state as a plain, JSON-safe value: configuration, tips, the withdrawals held with
 * their rejection flags, account entries, pegged totals, the throttle profile, initiator
 * and keys. Its size is bounded by the retained history. `encodeJson(snapshotOf(s))` is
 * deterministic.
 *
 * @example
 * ```ts
 * const text = encodeJson(snapshotOf(state)); // '{"format":"peg-limits/snapshot","version":3,…}'
 * const r = stateFromSnapshot(decodeJson(text));
 * if (r.ok) getLimits(r.state); // answers exactly as getLimits(state)
 * ```
 */
export function snapshotOf(state: LimitsState): Snapshot {
  const entries: Array<[string, SnapshotCaps]> = [];
  mapForEach(state.entries, (caps, name) => entries.push([name, capsOf(caps)]));
  const withdrawals: SnapshotWithdrawal[] = [];
  forEachWithdrawal(state, (w) => withdrawals.push(plainWithdrawal(w)));
  return {
    ...snapshotHead(state),
    accountCaps: sortedRecord(entries),
    withdrawals: withdrawals.sort((a, b) => a.height - b.height || byKey(a.id, b.id)),
  };
}

/** What a snapshot needs of a withdrawal, and nothing else of it. */
function plainWithdrawal(w: Withdrawal): SnapshotWithdrawal {
  return {
    id: w.id,
    account: w.account,
    amount: w.amount.toString(),
    height: w.height,
    rejected: w.rejected,
  };
}

/**
 * A snapshot in pieces, for writing a large one in slices (the data folder's compaction
 * writes the head, then the entries and the withdrawals a slice at a time, yielding between
 * slices): `head` is the snapshot without entries and withdrawals (`accountCaps` and
 * `withdrawals` empty); `nextEntries` and `nextWithdrawals` give the rest a slice at a
 * time, in no particular order, each call doing work in proportion to its slice only. The
 * state is immutable, so the slices may be taken across many turns of the event loop.
 * Putting them together into one {@link Snapshot} gives what {@link snapshotOf} gives, up to
 * the order of the two lists.
 *
 * @example
 * ```ts
 * const parts = snapshotParts(state);
 * write(encodeJson(parts.head));
 * for (let ws = parts.nextWithdrawals(1000); ws !== undefined; ws = parts.nextWithdrawals(1000))
 *   write(encodeJson(ws));
 * ```
 */
export function snapshotParts(state: LimitsState): SnapshotParts {
  const entryWalk = mapWalk(state.entries);
  let entriesDone = false;
  const withdrawals = withdrawalWalk(state);
  let withdrawalsDone = false;
  return {
    head: snapshotHead(state),
    nextEntries(max) {
      if (entriesDone) return undefined;
      const out: Record<string, SnapshotCaps> = Object.create(null);
      entriesDone = entryWalk(max, (caps, name) => {
        out[name] = capsOf(caps);
      });
      return out;
    },
    nextWithdrawals(max) {
      if (withdrawalsDone) return undefined;
      const out: SnapshotWithdrawal[] = [];
      // A budget of entries looked at, so that forgotten ones cannot make a call long.
      withdrawalsDone = withdrawals(max, (w) => out.push(plainWithdrawal(w)));
      return out;
    },
  };
}

/** What {@link snapshotParts} gives. */
interface SnapshotParts {
  /** The snapshot with `accountCaps` `{}` and `withdrawals` `[]`. */
  readonly head: Snapshot;
  /** Up to `max` more account entries, as `accountCaps` holds them; `undefined` once all were given. */
  nextEntries(max: number): Record<string, SnapshotCaps> | undefined;
  /**
   * Up to `max` more withdrawals, as `withdrawals` holds them (fewer, even none, while
   * forgotten ones are passed over); `undefined` once all were given.
   */
  nextWithdrawals(max: number): SnapshotWithdrawal[] | undefined;
}

// Everything of a snapshot but the entries and the withdrawals.
function snapshotHead(state: LimitsState): Snapshot {
  const pegged: Array<[string, AmountText]> = [];
  mapForEach(state.accountPegged, (total, name) => pegged.push([name, total.toString()]));
  const keys: ThrottleKey[] = [];
  mapForEach(state.throttleKeys, (k) =>
    keys.push({ name: k.name, secretHash: k.secretHash, revoked: k.revoked }),
  );
  return {
    format: SNAPSHOT_FORMAT,
    version: SNAPSHOT_VERSION,
    historyBlocks: state.historyBlocks,
    throttleProfile: {
      perWithdrawalCap: state.throttleProfile.perWithdrawalCap.toString(),
      rollingWithdrawalBlocks: state.throttleProfile.rollingWithdrawalBlocks.toString(),
      rollingWithdrawalCap: state.throttleProfile.rollingWithdrawalCap.toString(),
    },
    limits: capsOf(state.limits),
    accountCaps: {},
    tip: state.tip,
    highestTip: state.highestTip,
    historyCompleteFrom: state.completeFrom,
    blocksHeldFrom: state.heldFrom,
    peggedTotal: state.peggedTotal.toString(),
    accountPeggedTotals: sortedRecord(pegged),
    throttleKeys: keys.sort((a, b) => byKey(a.name, b.name)),
    throttleInitiator: state.throttleInitiator,
    withdrawals: [],
    changes: state.changes.map((c) => ({
      ...c,
      events: c.events.map((e) => textEvent(e) as Readonly<Record<string, unknown>>),
      approvals: [...c.approvals],
    })),
    nextChangeId: state.nextChangeId,
  };
}

// Thrown inside stateFromSnapshot, caught at its boundary.
class Invalid extends PegLimitsError {
  constructor(
    readonly at: string,
    readonly reason: string,
  ) {
    super('invalid_snapshot', reason);
  }
}

function invalid(path: string, reason: string): never {
  throw new Invalid(path, reason);
}

function record(
  value: unknown,
  path: string,
  fields?: ReadonlyArray<string>,
): Record<string, unknown> {
  if (!isRecord(value)) invalid(path, `expected an object, got ${describe(value)}`);
  if (fields !== undefined) {
    checked(() => rejectUnknownFields(value, fields, path), path);
    for (const f of fields) if (!(f in value)) invalid(joinPath(path, f), 'missing');
  }
  return value as Record<string, unknown>;
}

function list(value: unknown, path: string): ReadonlyArray<unknown> {
  if (!Array.isArray(value)) invalid(path, `expected an array, got ${describe(value)}`);
  return value;
}

// A field read by the core's own rule, its error put at the snapshot's path: the rule's
// LimitsError carries the path and the reason apart, so nothing is read out of a message.
function checked<T>(read: () => T, path: string): T {
  try {
    return read();
  } catch (e) {
    if (e instanceof LimitsError) invalid(e.path ?? path, e.message);
    throw e;
  }
}

// Heights are numbers in a state and may be bigints after decodeJson.
function height(value: unknown, path: string): Height {
  return checked(() => requireHeight(heightFromJson(value), path), path);
}

function nullable<T>(value: unknown, read: (v: unknown) => T): T | null {
  return value === null ? null : read(value);
}

/**
 * Restores a state from a snapshot (as {@link snapshotOf} made it, or as `decodeJson` read
 * it back). A snapshot is input: every rule of caps and events is checked, and a malformed,
 * inconsistent or unknown-version snapshot gets `invalid_snapshot` with the `path` of the
 * field at fault. Never throws.
 *
 * The restored state answers every view, check, admission and `whenAvailable` as the
 * original did, and accepts or refuses every later event as the original would.
 *
 * @example
 * ```ts
 * const r = stateFromSnapshot(decodeJson(readFileSync('snapshot.json', 'utf8')));
 * if (!r.ok) console.error(r.error.code, r.error.path); // 'invalid_snapshot' 'withdrawals[3].amount'
 * ```
 */
export function stateFromSnapshot(value: unknown): Result<{ readonly state: LimitsState }> {
  try {
    return { ok: true, state: restore(value) };
  } catch (e) {
    const error =
      e instanceof Invalid
        ? new LimitsError('invalid_snapshot', withHint(value, e.reason), e.at)
        : new LimitsError(
            'invalid_snapshot',
            `the snapshot could not be read: ${e instanceof Error ? e.message : String(e)}`,
          );
    return { ok: false, error };
  }
}

// A number where a version 1 or 2 snapshot has an amount: it was read with JSON.parse.
function withHint(value: unknown, reason: string): string {
  const given = isRecord(value) ? value.version : undefined;
  const version = typeof given === 'bigint' ? Number(given) : given;
  if ((version === 1 || version === 2) && /got the number/.test(reason))
    return `${reason}: a version ${version} snapshot carries amounts as JSON integers, which JSON.parse cannot keep exact; read its text with decodeJson (this release writes version ${SNAPSHOT_VERSION}, amounts as decimal strings, which JSON.parse reads)`;
  return reason;
}

function restore(input: unknown): LimitsState {
  const given = isRecord(input) ? input.version : undefined;
  const version = typeof given === 'bigint' ? Number(given) : given;
  // From version 3 on, amounts are decimal strings: read back into bigints first.
  const value =
    (version === 3 || version === 4 || version === SNAPSHOT_VERSION) && isRecord(input)
      ? snapshotAmounts(input, invalid)
      : input;
  const s = record(
    value,
    '',
    version === 1 ? V1_FIELDS : version === 2 ? V2_FIELDS : version === 3 ? V3_FIELDS : TOP_FIELDS,
  );
  if (s.format !== SNAPSHOT_FORMAT)
    invalid('format', `expected "${SNAPSHOT_FORMAT}", got ${describe(s.format)}`);
  if (
    typeof version !== 'number' ||
    !Number.isInteger(version) ||
    version < 1 ||
    version > SNAPSHOT_VERSION
  )
    invalid(
      'version',
      `this release reads versions 1 to ${SNAPSHOT_VERSION}, got ${describe(s.version)}`,
    );
  const historyBlocks = height(s.historyBlocks, 'historyBlocks');
  // Before version 5, caps held the six fields of the interface (no share).
  const capFields = version === SNAPSHOT_VERSION ? CAP_FIELDS : REPORTED_CAP_FIELDS;
  const limits = record(s.limits, 'limits', capFields);
  const accountCaps = record(s.accountCaps, 'accountCaps');
  for (const [name, caps] of Object.entries(accountCaps)) {
    const at = joinPath('accountCaps', name);
    const entry = record(caps, at, capFields);
    if (capFields.every((f) => entry[f] === null))
      invalid(at, 'an entry with no cap set does not exist; leave it out');
  }
  let state: LimitsState;
  try {
    state = createLimitsState({
      historyBlocks,
      throttleProfile: record(
        s.throttleProfile,
        'throttleProfile',
        PROFILE_FIELDS,
      ) as unknown as ThrottleProfile,
      limits: { ...(limits as Partial<Caps>), accountCaps: accountCaps as Record<string, Caps> },
    });
  } catch (e) {
    if (!(e instanceof LimitsError)) throw e;
    const path = (e.path ?? '').replace(/^limits\.accountCaps\./, 'accountCaps.');
    invalid(path, e.message);
  }

  const tip = nullable(s.tip, (v) => height(v, 'tip'));
  const highestTip = nullable(s.highestTip, (v) => height(v, 'highestTip'));
  if ((tip === null) !== (highestTip === null))
    invalid('tip', 'tip and highestTip are both null (no block known) or both heights');
  if (tip !== null && highestTip !== null && tip > highestTip)
    invalid('tip', `the tip ${tip} is above the highest tip ${highestTip}`);
  const oldest = highestTip === null ? 0 : Math.max(0, highestTip - historyBlocks + 1);

  // Each field is checked where it stands, by the rule its event would apply; the rest is
  // replayed as events, so the state's own rules check what spans entries (a key named
  // twice, an initiator), each event carrying the snapshot path it comes from.
  const events: LimitsEvent[] = [];
  const paths: string[] = [];
  const push = (event: LimitsEvent, path: string) => {
    events.push(event);
    paths.push(path);
  };
  if (highestTip !== null) push({ type: 'blockConnected', height: highestTip }, 'highestTip');
  const ids = new Set<string>();
  for (const [i, item] of list(s.withdrawals, 'withdrawals').entries()) {
    const at = `withdrawals[${i}]`;
    const w = record(item, at, WITHDRAWAL_FIELDS);
    const h = height(w.height, `${at}.height`);
    if (tip === null || h > tip)
      invalid(`${at}.height`, `a withdrawal held must be at or below the tip ${tip}, got ${h}`);
    if (h < oldest)
      invalid(`${at}.height`, `height ${h} is older than the retained history (${oldest}…)`);
    if (typeof w.rejected !== 'boolean')
      invalid(`${at}.rejected`, `expected true or false, got ${describe(w.rejected)}`);
    const id = checked(() => requireId(w.id, `${at}.id`), `${at}.id`);
    if (ids.has(id)) invalid(`${at}.id`, `the id ${JSON.stringify(id)} appears twice`);
    ids.add(id);
    const account = checked(() => requireAccount(w.account, `${at}.account`), `${at}.account`);
    const amount = checked(() => requirePositive(w.amount, `${at}.amount`), `${at}.amount`);
    push({ type: 'withdrawalRequested', id, account, amount, height: h }, at);
    if (w.rejected) push({ type: 'withdrawalRejected', id }, at);
  }
  if (tip !== null && highestTip !== null && tip < highestTip)
    push({ type: 'chainReorganized', height: tip }, 'tip');
  const completeFrom =
    version >= 3 ? nullable(s.historyCompleteFrom, (v) => height(v, 'historyCompleteFrom')) : null;
  if (completeFrom !== null)
    push({ type: 'historyCompleteFrom', height: completeFrom }, 'historyCompleteFrom');
  const heldFrom =
    version >= 4 ? nullable(s.blocksHeldFrom, (v) => height(v, 'blocksHeldFrom')) : null;
  if (heldFrom !== null) push({ type: 'blocksHeld', height: heldFrom }, 'blocksHeldFrom');
  const peggedTotal = checked(() => requireCap(s.peggedTotal, 'peggedTotal'), 'peggedTotal');
  push({ type: 'peggedTotalObserved', total: peggedTotal }, 'peggedTotal');
  for (const [name, total] of Object.entries(
    record(s.accountPeggedTotals, 'accountPeggedTotals'),
  )) {
    const at = joinPath('accountPeggedTotals', name);
    checked(() => requireAccount(name, at), at);
    if (checked(() => requireCap(total, at), at) === 0n) invalid(at, 'a total of 0 is left out');
    push({ type: 'peggedTotalObserved', account: name, total: total as Amount }, at);
  }
  for (const [i, item] of list(s.throttleKeys, 'throttleKeys').entries()) {
    const at = `throttleKeys[${i}]`;
    const k = record(item, at, KEY_FIELDS);
    const name = checked(() => requireKeyName(k.name, `${at}.name`), `${at}.name`);
    if (!isSecretHash(k.secretHash))
      invalid(
        `${at}.secretHash`,
        'expected a secret hash made by hashThrottleSecret (sha256:<salt>:<digest>)',
      );
    if (typeof k.revoked !== 'boolean')
      invalid(`${at}.revoked`, `expected true or false, got ${describe(k.revoked)}`);
    push({ type: 'throttleKeyAdded', name, secretHash: k.secretHash }, at);
    if (k.revoked) push({ type: 'throttleKeyRevoked', name }, at);
  }
  if (s.throttleInitiator !== null) {
    const initiator = checked(
      () => requireKeyName(s.throttleInitiator, 'throttleInitiator'),
      'throttleInitiator',
    );
    push({ type: 'throttleStarted', initiator }, 'throttleInitiator');
  }

  const r = applyAll(state, events);
  if (r.ok) return withChanges(r.state, s, version === 1);
  const m = /^\[(\d+)\](?:\.(.*))?$/.exec(r.error.path ?? '');
  const base = m === null ? '' : (paths[Number(m[1])] ?? '');
  const field = m?.[2];
  // Where the event stands for one snapshot field, that field is at fault; where it stands
  // for a snapshot entry (a withdrawal, a key), the entry's field of the same name.
  const path = field === undefined || !/\]$/.test(base) ? base : `${base}.${field}`;
  invalid(path, r.error.message);
}

// The pending changes, put in place once the rest is restored (they are not replayed: the
// state they were proposed on is gone; each is validated again when it applies).
function withChanges(state: LimitsState, s: Record<string, unknown>, v1: boolean): LimitsState {
  if (v1) return state;
  const next = height(s.nextChangeId, 'nextChangeId');
  if (next < 1) invalid('nextChangeId', 'expected a positive integer');
  const changes: PendingChange[] = [];
  for (const [i, item] of list(s.changes, 'changes').entries()) {
    const at = `changes[${i}]`;
    let change: PendingChange;
    try {
      change = restoreChange(item, state.historyBlocks, state.tip);
    } catch (e) {
      if (!(e instanceof LimitsError)) throw e;
      const path = e.path === undefined || e.path === '' ? at : `${at}.${e.path}`;
      invalid(path, e.message);
    }
    const last = changes[changes.length - 1];
    if (last !== undefined && change.id <= last.id)
      invalid(`${at}.id`, 'changes are listed by id, each once');
    if (change.id >= next)
      invalid(`${at}.id`, `the id ${change.id} is not below nextChangeId ${next}`);
    changes.push(change);
  }
  // A copy with the changes in place, made as every state is, so it has every state's shape.
  const d = draftOf(state);
  d.changes = changes;
  d.nextChangeId = next;
  return asState(stateFieldsOf(d));
}
