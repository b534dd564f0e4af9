/**
 * The state and its events: `createLimitsState`, `apply`, `applyAll` (the README, "Events"). The rules
 * of the operator's events (limits, account entries, pegged totals) are here; the chain's
 * are in `chain.ts`, throttle mode's and the key registry's in `throttle.ts`.
 *
 * A state is an immutable value. Every event handler works on a private draft (`draft.ts`)
 * whose persistent structures are updated with a fresh owner token, so nodes made during
 * one `apply`/`applyAll` may be changed in place while every earlier state stays untouched.
 * An event that fails discards the whole draft: the input state is never touched.
 */
import { entryBooks, flushBooks } from './books.js';
import {
  blockConnected,
  chainReorganized,
  withdrawalRejected,
  withdrawalRejectionUndone,
  withdrawalRequested,
} from './chain.js';
import {
  applyDue,
  type BatchTrials,
  cancelAll,
  changeApproved,
  changeCancelled,
  changeProposed,
} from './changes.js';
import {
  asState,
  type Draft,
  draftOf,
  type LimitsState,
  stateFieldsOf,
  type ThrottleProfile,
} from './draft.js';
import { describe, fail, LimitsError, type Result } from './errors.js';
import type { LimitsEvent, SettledChange } from './events.js';
import { requireHeight } from './heights.js';
import {
  NO_INTEGRITY_CHECK,
  pegBreakerCleared,
  pegIntegritySet,
  reservesObserved,
  settleBreaker,
} from './integrity.js';
import {
  CAP_FIELDS,
  type Caps,
  forEachAccountEntry,
  isEmptyCaps,
  isRecord,
  type LimitsConfig,
  NO_CAPS,
  rejectUnknownFields,
  requireAccount,
  requireCaps,
} from './limits.js';
import { depositMinted, mintHistoryCompleteFrom } from './mints.js';
import { peggedTotalObserved } from './pegged-totals.js';
import { emptyMap, mapDelete, mapGet, mapSet } from './pmap.js';
import { treeShapeOf } from './sum-tree.js';
import {
  DEFAULT_THROTTLE_PROFILE,
  requireProfile,
  throttleEnded,
  throttleKeyAdded,
  throttleKeyReactivated,
  throttleKeyRevoked,
  throttleStarted,
} from './throttle.js';
import { flushWithdrawals } from './withdrawals.js';

export type {
  IntegrityPolicy,
  LimitsState,
  ReservesReading,
  ThrottleKey,
  ThrottleProfile,
  Tripped,
  Withdrawal,
} from './draft.js';
export type { Height, LimitsEvent, PendingChange, SettledChange } from './events.js';
export { DEFAULT_THROTTLE_PROFILE } from './throttle.js';

/** The default number of blocks of retained history (two weeks of Bitcoin blocks). */
export const DEFAULT_HISTORY_BLOCKS = 2016;

/** What {@link apply} and {@link applyAll} give when the events apply. */
export interface Applied {
  /** The state after the events. */
  readonly state: LimitsState;
  /** What became of pending changes on the way (applied, dropped, cancelled), in order. */
  readonly settled: ReadonlyArray<SettledChange>;
}

/** Options of {@link createLimitsState}. */
export interface LimitsOptions {
  /** The initial caps and account entries (all unset when absent). */
  readonly limits?: LimitsConfig | undefined;
  /** Heights of per-block data kept (default 2016); every window must fit. */
  readonly historyBlocks?: number | undefined;
  /** The caps throttle mode imposes (default: the sBTC bridge's). */
  readonly throttleProfile?: ThrottleProfile | undefined;
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
      `expected an integer from 1 to 1000000, got ${describe(historyBlocks)}`,
      'historyBlocks',
    );
  }
  const treeShape = treeShapeOf(historyBlocks);
  const base = asState({
    historyBlocks,
    tip: null,
    highestTip: null,
    limits: NO_CAPS,
    entries: emptyMap(),
    completeFrom: null,
    heldFrom: null,
    peggedTotal: 0n,
    throttleProfile: DEFAULT_THROTTLE_PROFILE,
    throttleModeInitiator: null,
    throttleKeys: emptyMap(),
    treeShape,
    historySums: treeShape.empty,
    generations: [
      {
        map: emptyMap(),
        opened: null,
        sealed: null,
        filter: undefined,
        hashes: undefined,
        older: undefined,
      },
    ],
    books: emptyMap(),
    mintSums: treeShape.empty,
    mints: emptyMap(),
    mintBooks: emptyMap(),
    mintCompleteFrom: null,
    accountPegged: emptyMap(),
    totals: [],
    accountTotals: emptyMap(),
    reserves: null,
    integrity: NO_INTEGRITY_CHECK,
    tripped: null,
    changes: [],
    nextChangeId: 1,
  });
  const draft = draftOf(base);
  try {
    if (options.throttleProfile !== undefined) {
      draft.throttleProfile = requireProfile(
        options.throttleProfile,
        historyBlocks,
        'throttleProfile',
      );
    } else {
      requireProfile(DEFAULT_THROTTLE_PROFILE, historyBlocks, 'throttleProfile');
    }
    if (options.limits !== undefined) setLimits(draft, options.limits, 'limits');
  } catch (e) {
    throw e instanceof LimitsError && e.code === 'invalid_event'
      ? new LimitsError('invalid_option', e.message, e.path)
      : e;
  }
  return freeze(draft);
}

function freeze(d: Draft): LimitsState {
  flushWithdrawals(d);
  flushBooks(d);
  return asState(stateFieldsOf(d));
}

// Makes the draft afresh from `state`, with a new owner token: nothing the draft made so far
// is changed in place after this, so `state` (and any state it was made from) stays valid.
function adopt(d: Draft, state: LimitsState): void {
  const settled = d.settled;
  Object.assign(d, draftOf(state, d.owner.single));
  d.settled = settled;
  d.changed = true;
}

// What the rules of pending changes need: a batch applied inside an event, on its own.
const batches: BatchTrials = {
  trial(d, events) {
    const before = freeze(d);
    adopt(d, before);
    const r = run(before, events, true);
    return r.ok ? { ok: true, before, after: r.state } : r;
  },
  adopt,
};

// ---------------------------------------------------------------------------------------
// Handlers: each validates, then changes the draft; a LimitsError thrown anywhere discards
// the whole draft, so the input state is never touched.

function setLimits(d: Draft, input: unknown, path: string): void {
  const caps = requireCaps(input, path, d.historyBlocks, ['accountCaps']);
  const accountCaps = (input as LimitsConfig).accountCaps;
  const updates: Array<[string, Caps]> = [];
  if (accountCaps !== undefined)
    forEachAccountEntry(accountCaps, path, (account, entry, entryPath) => {
      updates.push([account, requireCaps(entry, entryPath, d.historyBlocks)]);
    });
  d.limits = caps;
  for (const [account, entry] of updates) setEntry(d, account, entry);
  // An operator setting the caps overrides throttle mode.
  d.throttleModeInitiator = null;
  d.changed = true;
}

// limitsUpdated: only the fields it names change, globally and in the entries it lists;
// what they make together is checked as a whole. Throttle mode stays as it is.
function updateLimits(d: Draft, input: unknown, path: string): void {
  if (!isRecord(input))
    fail('invalid_event', `expected an object of limits, got ${describe(input)}`, path);
  const caps = requireCaps(merged(d.limits, input, path, ['accountCaps']), path, d.historyBlocks, [
    'accountCaps',
  ]);
  const updates: Array<[string, Caps]> = [];
  const accountCaps = (input as LimitsConfig).accountCaps;
  if (accountCaps !== undefined)
    forEachAccountEntry(accountCaps, path, (account, entry, entryPath) => {
      if (!isRecord(entry))
        fail('invalid_event', `expected an object of limits, got ${describe(entry)}`, entryPath);
      const before = mapGet(d.entries, account) ?? NO_CAPS;
      updates.push([
        account,
        requireCaps(merged(before, entry, entryPath, []), entryPath, d.historyBlocks),
      ]);
    });
  d.limits = caps;
  for (const [account, entry] of updates) setEntry(d, account, entry);
  d.changed = true;
}

// `caps` with the fields `input` names put over it (the names checked).
function merged(
  caps: Caps,
  input: Readonly<Record<string, unknown>>,
  path: string,
  allowed: ReadonlyArray<string>,
): Record<string, unknown> {
  rejectUnknownFields(input, CAP_FIELDS, path, allowed);
  const out: Record<string, unknown> = { ...caps };
  for (const f of CAP_FIELDS) if (f in input && input[f] !== undefined) out[f] = input[f];
  return out;
}

function setEntry(d: Draft, account: string, caps: Caps): void {
  const before = mapGet(d.entries, account) ?? NO_CAPS;
  d.entries = isEmptyCaps(caps)
    ? mapDelete(d.entries, account, d.owner)
    : mapSet(d.entries, account, caps, d.owner);
  entryBooks(d, account, before, caps);
  d.changed = true;
}

// The history is complete from `height` on: windows reaching below it report no room.
function historyCompleteFrom(d: Draft, e: Record<string, unknown>): void {
  const height = requireHeight(e.height, 'height');
  if (d.completeFrom === height) return;
  d.completeFrom = height;
  d.changed = true;
}

// A feed holds blocks past the chain bounds from `height` on: every window reports no room
// until the hold ends (the first height held stays while more are held behind it).
function blocksHeld(d: Draft, e: Record<string, unknown>): void {
  const height = requireHeight(e.height, 'height');
  if (d.heldFrom !== null) return;
  d.heldFrom = height;
  d.changed = true;
}

// The hold ended (the held blocks released or dropped): the windows report their room again.
function blocksReleased(d: Draft): void {
  if (d.heldFrom === null) return;
  d.heldFrom = null;
  d.changed = true;
}

function accountLimitsSet(d: Draft, e: Record<string, unknown>): void {
  const account = requireAccount(e.account, 'account');
  setEntry(d, account, requireCaps(e.limits, 'limits', d.historyBlocks));
}

type EventHandler = (d: Draft, e: Record<string, unknown>) => void;

const handlers = new Map<string, EventHandler>([
  ['limitsSet', (d, e) => setLimits(d, e.limits, 'limits')],
  ['limitsUpdated', (d, e) => updateLimits(d, e.limits, 'limits')],
  ['accountLimitsSet', accountLimitsSet],
  ['blockConnected', connect],
  ['chainReorganized', chainReorganized],
  ['withdrawalRequested', withdrawalRequested],
  ['withdrawalRejected', withdrawalRejected],
  ['withdrawalRejectionUndone', withdrawalRejectionUndone],
  ['peggedTotalObserved', peggedTotalObserved],
  ['reservesObserved', reservesObserved],
  ['pegIntegritySet', pegIntegritySet],
  ['pegBreakerCleared', pegBreakerCleared],
  ['historyCompleteFrom', historyCompleteFrom],
  ['depositMinted', depositMinted],
  ['mintHistoryCompleteFrom', mintHistoryCompleteFrom],
  ['blocksHeld', blocksHeld],
  ['blocksReleased', blocksReleased],
  ['throttleKeyAdded', throttleKeyAdded],
  ['throttleKeyRevoked', throttleKeyRevoked],
  ['throttleKeyReactivated', throttleKeyReactivated],
  [
    'throttleStarted',
    (d, e) => {
      throttleStarted(d, e);
      cancelAll(d);
    },
  ],
  ['throttleEnded', throttleEnded],
  ['changeProposed', (d, e) => changeProposed(d, e, batches)],
  ['changeApproved', (d, e) => changeApproved(d, e, batches)],
  ['changeCancelled', changeCancelled],
]);

// A block may bring pending changes due: they apply inside it.
function connect(d: Draft, e: Record<string, unknown>): void {
  blockConnected(d, e);
  if (d.changes.length !== 0) applyDue(d, batches);
}

function step(d: Draft, value: unknown): void {
  const event = value as Record<string, unknown>;
  if (typeof value !== 'object' || value === null || typeof event.type !== 'string') {
    fail(
      'invalid_event',
      `expected an event object with a string "type", got ${describe(event)}`,
      'type',
    );
  }
  // The two events of every block first: a replay is mostly these.
  if (event.type === 'withdrawalRequested') withdrawalRequested(d, event);
  else if (event.type === 'blockConnected') connect(d, event);
  else {
    const handler = handlers.get(event.type);
    if (handler === undefined)
      fail('invalid_event', `unknown event type ${describe(event.type)}`, 'type');
    handler(d, event);
  }
}

function withIndex(error: LimitsError, index: number): LimitsError {
  const path =
    error.path === undefined || error.path === '' ? `[${index}]` : `[${index}].${error.path}`;
  return new LimitsError(error.code, error.message, path, index);
}

function run(state: LimitsState, events: Iterable<unknown>, indexed: boolean): Result<Applied> {
  const d = draftOf(state, !indexed);
  let index = 0;
  try {
    for (const event of events) {
      try {
        step(d, event);
        // No state the events pass through escapes the breaker.
        settleBreaker(d);
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
  return {
    ok: true,
    state: d.changed ? freeze(d) : state,
    settled: d.settled ?? NOTHING_SETTLED,
  };
}

const NOTHING_SETTLED: ReadonlyArray<SettledChange> = [];

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
export function apply(state: LimitsState, event: LimitsEvent): Result<Applied> {
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
export function applyAll(state: LimitsState, events: Iterable<LimitsEvent>): Result<Applied> {
  return run(state, events, true);
}
