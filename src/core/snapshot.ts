/**
 * Snapshots (docs/design.md, "Snapshots"): the state as plain, JSON-safe data. A snapshot
 * holds what the state knows and nothing of how it got there, so its size follows the
 * retained history, never the number of events seen. Reading one back is
 * `snapshot-reading.ts`.
 */

import type { Observation } from './draft.js';
import type { PendingChange } from './events.js';
import { CAP_FIELDS, type Caps } from './limits.js';
import { mapForEach, mapWalk } from './pmap.js';
import type { Height, LimitsState, ThrottleKey, ThrottleProfile, Withdrawal } from './state.js';
import { forEachWithdrawal, withdrawalWalk } from './withdrawals.js';

/** The `format` every snapshot carries. */
export const SNAPSHOT_FORMAT = 'peg-limits/snapshot';
/**
 * The snapshot version this release writes. It reads this one, version 6 (written before the
 * mint window: no mints held, the mint history complete, no mint window in the caps), version 5 (written before the
 * peg's backing was checked: the check off, no reserves read, each pegged total its only
 * observation), version 4 (besides, written before a
 * window cap could be a share of the total: its caps hold none), version 3 (besides, written
 * before a feed could hold blocks: none held), version 2 (besides, amounts as integers, to
 * be read with `decodeJson`; written before a history could start late: complete from the
 * start) and version 1 (besides, written before pending changes existed: it holds none).
 */
export const SNAPSHOT_VERSION = 7;

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

/** A mint in a snapshot (its amount as decimal digits). */
export interface SnapshotMint {
  readonly id: string;
  readonly account: string;
  readonly amount: AmountText;
  readonly height: Height;
}

/** The throttle profile in a snapshot. */
export type SnapshotProfile = { readonly [K in keyof ThrottleProfile]: AmountText };

/** A pegged total observed, in a snapshot: the tip it was applied at (null before any block). */
export interface SnapshotObservation {
  readonly tip: Height | null;
  readonly total: AmountText;
}

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
  /** The configured global caps (without the throttle overlay), every settable field (seven since version 5, ten since version 7). */
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
  /**
   * Each global pegged total observed that a window can still reach, with the tip it was
   * applied at, in the order applied (the lagged basis of a share); the last is `peggedTotal`.
   */
  readonly totalsObserved: ReadonlyArray<SnapshotObservation>;
  /** The same for each account's own pegged total, by account name. */
  readonly accountTotalsObserved: Readonly<Record<string, ReadonlyArray<SnapshotObservation>>>;
  /** The reserves last read (`reservesObserved`), or `null` before any. */
  readonly reserves: { readonly total: AmountText; readonly height: Height } | null;
  /** The check of the peg's backing (`maxUnbacked` null: off). */
  readonly pegIntegrity: {
    readonly maxUnbacked: AmountText | null;
    readonly reservesMaxAge: number;
  };
  /** Where the breaker tripped, and the figures then; `null` while it has not. */
  readonly pegBreaker: {
    readonly height: Height | null;
    readonly peggedTotal: AmountText;
    readonly reserves: AmountText;
    readonly unbacked: AmountText;
  } | null;
  /** The id the next pending change gets. */
  readonly nextChangeId: number;
  /** The mints held (inside the history), sorted by height, then id (version 7 on). */
  readonly mints: ReadonlyArray<SnapshotMint>;
  /** The height from which every mint is known (`mintHistoryCompleteFrom`); null: from the start. */
  readonly mintHistoryCompleteFrom: Height | null;
}

/** The fields of a snapshot of this version, in the order it writes them. */
export const TOP_FIELDS = [
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
  'totalsObserved',
  'accountTotalsObserved',
  'reserves',
  'pegIntegrity',
  'pegBreaker',
  'mints',
  'mintHistoryCompleteFrom',
];
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
  const observed: Array<[string, ReadonlyArray<SnapshotObservation>]> = [];
  mapForEach(state.accountTotals, (list, name) =>
    observed.push([name, list.map(plainObservation)]),
  );
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
    throttleInitiator: state.throttleModeInitiator,
    withdrawals: [],
    changes: state.changes.map((c) => ({
      ...c,
      events: c.events.map((e) => textEvent(e) as Readonly<Record<string, unknown>>),
      approvals: [...c.approvals],
    })),
    nextChangeId: state.nextChangeId,
    totalsObserved: state.totals.map(plainObservation),
    accountTotalsObserved: sortedRecord(observed),
    reserves:
      state.reserves === null
        ? null
        : { total: state.reserves.total.toString(), height: state.reserves.height },
    pegIntegrity: {
      maxUnbacked: state.integrity.maxUnbacked?.toString() ?? null,
      reservesMaxAge: state.integrity.reservesMaxAge,
    },
    pegBreaker:
      state.tripped === null
        ? null
        : {
            height: state.tripped.height,
            peggedTotal: state.tripped.peggedTotal.toString(),
            reserves: state.tripped.reserves.toString(),
            unbacked: state.tripped.unbacked.toString(),
          },
    mints: mintsOf(state),
    mintHistoryCompleteFrom: state.mintCompleteFrom,
  };
}

// The mints held, sorted by height, then id. In the head: a window's mints are few beside
// the withdrawals of the history.
function mintsOf(state: LimitsState): SnapshotMint[] {
  const out: SnapshotMint[] = [];
  mapForEach(state.mints, (m) =>
    out.push({ id: m.id, account: m.account, amount: m.amount.toString(), height: m.height }),
  );
  return out.sort((a, b) => a.height - b.height || byKey(a.id, b.id));
}

function plainObservation(o: Observation): SnapshotObservation {
  return { tip: o.tip, total: o.total.toString() };
}
