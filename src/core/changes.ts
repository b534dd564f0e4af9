/**
 * Pending changes (docs/semantics.md, "Loosening waits"): a batch that loosens the limits,
 * held in the state until the tip reaches its height or a quorum of operators approves
 * it, then applied as one batch, validated again. The rules of the three change events,
 * of a block that brings changes due, and of throttle mode cancelling them all.
 *
 * Applying a change's batch inside another event needs the state's own batch machinery,
 * which lives above this module (`state.ts`): it is handed in as {@link BatchTrials}.
 */

import { requireCap } from './amount.js';
import type { Draft, LimitsState } from './draft.js';
import { describe, fail, joinPath, LimitsError } from './errors.js';
import type { LimitsEvent, PendingChange, SettledChange } from './events.js';
import { heightFromJson, requireHeight } from './heights.js';
import { requireIntegrityPolicy } from './integrity.js';
import { isSecretHash } from './keys.js';
import {
  CAP_FIELDS,
  forEachAccountEntry,
  isRecord,
  rejectUnknownFields,
  requireAccount,
  requireCaps,
  requireName,
} from './limits.js';
import { delayOf, loosens, quorumOf } from './loosening.js';

/** The event types a pending change may hold: the limits and key events that loosen. */
export const CHANGE_EVENT_TYPES: ReadonlySet<string> = new Set([
  'limitsSet',
  'limitsUpdated',
  'accountLimitsSet',
  'throttleEnded',
  'throttleKeyAdded',
  'throttleKeyRevoked',
  'throttleKeyReactivated',
  'pegIntegritySet',
  'pegBreakerCleared',
  'mintHistoryCompleteFrom',
]);

/** The state's batch machinery, as the change rules need it. */
export interface BatchTrials {
  /**
   * Applies `events` to the draft's state as a batch of its own, without changing the
   * draft: the state before (the draft so far) and after, or the batch's error.
   */
  trial(
    d: Draft,
    events: ReadonlyArray<unknown>,
  ):
    | { readonly ok: true; readonly before: LimitsState; readonly after: LimitsState }
    | { readonly ok: false; readonly error: LimitsError };
  /** Makes `state` the draft's (a state the draft's own trial made). */
  adopt(d: Draft, state: LimitsState): void;
}

function requireChangeId(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)
    fail(
      'invalid_change_id',
      `expected a change id (a positive integer), got ${describe(value)}`,
      path,
    );
  return value;
}

function requireOperator(value: unknown, path: string): string {
  return requireName(value, path, 'invalid_change', 'an operator name');
}

function indexOf(d: Draft, id: number): number {
  const at = d.changes.findIndex((c) => c.id === id);
  if (at < 0)
    fail(
      'change_not_found',
      `no pending change ${id}: it was never proposed, or it applied, was dropped or was cancelled`,
      'id',
    );
  return at;
}

function record(d: Draft, settled: SettledChange): void {
  d.settled ??= [];
  d.settled.push(settled);
}

// The change's batch applies as one batch, validated again on the state as it is now; one
// that no longer applies is dropped, and says why.
function settle(d: Draft, change: PendingChange, batches: BatchTrials): void {
  const trial = batches.trial(d, change.events);
  if (trial.ok) {
    batches.adopt(d, trial.after);
    record(d, { change, outcome: 'applied' });
  } else record(d, { change, outcome: 'dropped', error: trial.error });
}

// A Map of account entries becomes a plain object, so that a change is plain data.
function plainEvent(event: Record<string, unknown>): LimitsEvent {
  const limits = event.limits as Record<string, unknown> | undefined;
  if (
    (event.type !== 'limitsSet' && event.type !== 'limitsUpdated') ||
    !(limits?.accountCaps instanceof Map)
  )
    return event as unknown as LimitsEvent;
  return {
    ...event,
    limits: { ...limits, accountCaps: Object.fromEntries(limits.accountCaps) },
  } as unknown as LimitsEvent;
}

// Who proposed a change and what it waits for: the rules a proposal and a change read back
// from a snapshot share.
function checkTerms(e: Readonly<Record<string, unknown>>): {
  proposedBy: string;
  delayBlocks: number | null;
  quorum: number;
} {
  const proposedBy = requireOperator(e.proposedBy, 'proposedBy');
  const delay = delayOf(e.delayBlocks, 1, 'invalid_change', 'delayBlocks');
  const quorum = quorumOf(e.quorum, 'invalid_change', 'quorum');
  if (delay === null && quorum === 0)
    fail(
      'invalid_change',
      'a change that waits for neither blocks (delayBlocks null) nor a quorum (0) would never apply',
      'delayBlocks',
    );
  return { proposedBy, delayBlocks: delay, quorum };
}

/**
 * `changeProposed`: holds a loosening batch back as a pending change. The batch must apply
 * on the state as it is (its error otherwise, with the path of its event under `events`)
 * and must loosen something (`change_loosens_nothing`: it would apply at once).
 */
export function changeProposed(d: Draft, e: Record<string, unknown>, batches: BatchTrials): void {
  const { proposedBy, delayBlocks, quorum } = checkTerms(e);
  const list = e.events;
  if (!Array.isArray(list) || list.length === 0)
    fail('invalid_change', `expected a non-empty array of events, got ${describe(list)}`, 'events');
  const events: LimitsEvent[] = [];
  for (const [i, event] of list.entries()) {
    const type = isRecord(event) ? event.type : undefined;
    if (typeof type !== 'string' || !CHANGE_EVENT_TYPES.has(type))
      fail(
        'invalid_change',
        `a pending change holds only ${[...CHANGE_EVENT_TYPES].join(', ')} events, got ${describe(type)}`,
        `events[${i}].type`,
      );
    events.push(plainEvent(event as Record<string, unknown>));
  }
  const trial = batches.trial(d, events);
  if (!trial.ok)
    throw new LimitsError(trial.error.code, trial.error.message, `events${trial.error.path ?? ''}`);
  if (!loosens(trial.before, trial.after))
    fail(
      'change_loosens_nothing',
      'this batch loosens nothing, so it does not wait: send it as a batch and it applies at once',
      'events',
    );
  const tip = d.tip;
  const change: PendingChange = {
    id: d.nextChangeId,
    events,
    proposedBy,
    proposedAt: tip,
    delayBlocks,
    effectiveAt:
      delayBlocks === null || tip === null
        ? null
        : Math.min(tip + delayBlocks, Number.MAX_SAFE_INTEGER),
    quorum,
    approvals: [proposedBy],
  };
  d.changes = [...d.changes, change];
  d.nextChangeId += 1;
  d.changed = true;
}

/**
 * `changeApproved`: adds an approval; a no-op when that operator approved already. The
 * approval that reaches the quorum applies the change's batch (or drops it).
 */
export function changeApproved(d: Draft, e: Record<string, unknown>, batches: BatchTrials): void {
  const id = requireChangeId(e.id, 'id');
  const by = requireOperator(e.by, 'by');
  const at = indexOf(d, id);
  const change = d.changes[at]!;
  if (change.approvals.includes(by)) return;
  const approved: PendingChange = { ...change, approvals: [...change.approvals, by] };
  d.changed = true;
  if (change.quorum !== 0 && approved.approvals.length >= change.quorum) {
    d.changes = d.changes.filter((c) => c.id !== id);
    settle(d, approved, batches);
    return;
  }
  d.changes = d.changes.map((c) => (c.id === id ? approved : c));
}

/** `changeCancelled`: removes a pending change, which then never applies. */
export function changeCancelled(d: Draft, e: Record<string, unknown>): void {
  const id = requireChangeId(e.id, 'id');
  requireOperator(e.by, 'by');
  const change = d.changes[indexOf(d, id)]!;
  d.changes = d.changes.filter((c) => c.id !== id);
  record(d, { change, outcome: 'cancelled' });
  d.changed = true;
}

/** Throttle mode starts: every pending change is cancelled (whoever may brake may veto). */
export function cancelAll(d: Draft): void {
  if (d.changes.length === 0) return;
  for (const change of d.changes) record(d, { change, outcome: 'cancelled' });
  d.changes = [];
  d.changed = true;
}

/**
 * A block was connected: the changes whose `effectiveAt` it reaches apply, oldest first,
 * each as one batch. A change proposed before any block counts its delay from the first.
 */
export function applyDue(d: Draft, batches: BatchTrials): void {
  const tip = d.tip;
  if (tip === null) return;
  let changes = d.changes;
  if (changes.some((c) => c.effectiveAt === null && c.delayBlocks !== null)) {
    changes = changes.map((c) =>
      c.effectiveAt === null && c.delayBlocks !== null
        ? { ...c, effectiveAt: Math.min(tip + c.delayBlocks, Number.MAX_SAFE_INTEGER) }
        : c,
    );
    d.changes = changes;
  }
  const due = changes.filter((c) => c.effectiveAt !== null && c.effectiveAt <= tip);
  if (due.length === 0) return;
  d.changes = changes.filter((c) => c.effectiveAt === null || c.effectiveAt > tip);
  for (const change of due) settle(d, change, batches);
}

/**
 * Checks a pending change read back from a snapshot, as far as it can be checked without
 * the state it was proposed on: its fields, its events' shapes and fields, and that it is
 * still waiting at `tip`. Throws a LimitsError whose path is relative to the change.
 */
export function restoreChange(
  value: unknown,
  historyBlocks: number,
  tip: number | null,
): PendingChange {
  if (!isRecord(value))
    fail('invalid_change', `expected a pending change, got ${describe(value)}`, '');
  rejectUnknownFields(value, CHANGE_FIELDS, '');
  for (const f of CHANGE_FIELDS) if (!(f in value)) fail('invalid_change', 'missing', f);
  const id = requireChangeId(heightFromJson(value.id), 'id');
  const { proposedBy, delayBlocks, quorum } = checkTerms(value);
  const proposedAt = nullableHeight(value.proposedAt, 'proposedAt');
  const effectiveAt = nullableHeight(value.effectiveAt, 'effectiveAt');
  const events: LimitsEvent[] = [];
  if (!Array.isArray(value.events) || value.events.length === 0)
    fail(
      'invalid_change',
      `expected a non-empty array of events, got ${describe(value.events)}`,
      'events',
    );
  for (const [i, event] of value.events.entries())
    events.push(checkEvent(event, historyBlocks, `events[${i}]`));
  if (!Array.isArray(value.approvals) || value.approvals.length === 0)
    fail('invalid_change', 'expected the approvals, the proposer first', 'approvals');
  const approvals = value.approvals.map((a, i) => requireOperator(a, `approvals[${i}]`));
  if (approvals[0] !== proposedBy)
    fail('invalid_change', 'the first approval is the proposer', 'approvals[0]');
  if (new Set(approvals).size !== approvals.length)
    fail('invalid_change', 'an operator approves once', 'approvals');
  // What a change still waiting must be.
  if (quorum !== 0 && approvals.length >= quorum)
    fail(
      'invalid_change',
      `${approvals.length} approvals reach the quorum of ${quorum}: it would have applied`,
      'approvals',
    );
  if (effectiveAt !== null && tip !== null && effectiveAt <= tip)
    fail(
      'invalid_change',
      `it applies at ${effectiveAt}, at or below the tip ${tip}: it would have applied`,
      'effectiveAt',
    );
  if (delayBlocks !== null && effectiveAt === null && tip !== null)
    fail(
      'invalid_change',
      'a change that waits for blocks has its height once a block is known',
      'effectiveAt',
    );
  if (delayBlocks === null && effectiveAt !== null)
    fail('invalid_change', 'a change that waits for no blocks has no height', 'effectiveAt');
  return { id, events, proposedBy, proposedAt, delayBlocks, effectiveAt, quorum, approvals };
}

/** The fields of a pending change, in the order a snapshot and an answer give them. */
export const CHANGE_FIELDS = [
  'id',
  'events',
  'proposedBy',
  'proposedAt',
  'delayBlocks',
  'effectiveAt',
  'quorum',
  'approvals',
];

// Integers read back by decodeJson are bigints.
function nullableHeight(value: unknown, path: string): number | null {
  if (value === null) return null;
  const n = heightFromJson(value);
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0)
    fail('invalid_change', `expected null or a block height, got ${describe(value)}`, path);
  return n;
}

// An event a pending change may hold, checked for its shape and its fields (not for
// whether it applies: that is judged when the change applies).
function checkEvent(event: unknown, historyBlocks: number, path: string): LimitsEvent {
  const type = isRecord(event) ? event.type : undefined;
  if (!isRecord(event) || typeof type !== 'string' || !CHANGE_EVENT_TYPES.has(type))
    fail(
      'invalid_change',
      `a pending change holds only ${[...CHANGE_EVENT_TYPES].join(', ')} events, got ${describe(type)}`,
      joinPath(path, 'type'),
    );
  if (type === 'limitsUpdated') checkUpdate(event.limits, joinPath(path, 'limits'));
  else if (type === 'limitsSet') {
    requireCaps(event.limits, joinPath(path, 'limits'), historyBlocks, ['accountCaps']);
    const accountCaps = (event.limits as Record<string, unknown>).accountCaps;
    if (accountCaps !== undefined)
      forEachAccountEntry(accountCaps, joinPath(path, 'limits'), (_account, caps, at) => {
        requireCaps(caps, at, historyBlocks);
      });
  } else if (type === 'accountLimitsSet') {
    requireAccount(event.account, joinPath(path, 'account'));
    requireCaps(event.limits, joinPath(path, 'limits'), historyBlocks);
  } else if (type === 'pegIntegritySet') requireIntegrityPolicy(event, path);
  else if (type === 'mintHistoryCompleteFrom') {
    rejectUnknownFields(event, ['type', 'height'], path);
    // Read with decodeJson, a height is a bigint: a number, as the event holds it.
    const height = requireHeight(heightFromJson(event.height), joinPath(path, 'height'));
    return { type, height };
  } else if (type !== 'throttleEnded' && type !== 'pegBreakerCleared') {
    requireName(event.name, joinPath(path, 'name'), 'invalid_key_name', 'a key name');
    if (type === 'throttleKeyAdded' && !isSecretHash(event.secretHash))
      fail(
        'invalid_secret_hash',
        'expected a secret hash made by hashThrottleSecret',
        joinPath(path, 'secretHash'),
      );
  }
  return event as unknown as LimitsEvent;
}

// The shape of a limitsUpdated's fields (what they make together is judged when it applies).
function checkUpdate(limits: unknown, path: string): void {
  checkCapFields(limits, path, ['accountCaps']);
  const accountCaps = (limits as Record<string, unknown>).accountCaps;
  if (accountCaps === undefined) return;
  forEachAccountEntry(accountCaps, path, (_account, caps, at) => {
    checkCapFields(caps, at, []);
  });
}

// An object of cap fields, each an amount or null (unset), and nothing else but `allowed`.
function checkCapFields(value: unknown, path: string, allowed: ReadonlyArray<string>): void {
  if (!isRecord(value))
    fail('invalid_event', `expected an object of limits, got ${describe(value)}`, path);
  rejectUnknownFields(value, CAP_FIELDS, path, allowed);
  for (const f of CAP_FIELDS)
    if (value[f] !== undefined && value[f] !== null) requireCap(value[f], joinPath(path, f));
}
