/**
 * An operator's batch under the operator rules (docs/semantics.md, "Operators"): each event
 * needs a scope the operator holds, the chain bounds hold unless the batch overrides them
 * (which needs chain and limits), and a batch that loosens the limits becomes a pending
 * change where loosening waits. Every door an operator's events come through (`POST
 * /admin/events`, Emily's writes, a Stacks feed, the Bitcoin reader) is decided here, and the
 * outcome is data: applied, waiting as a change, or refused with the event's index and code.
 */
import { type ChainBounds, checkChainBounds } from './bounds.js';
import { CHANGE_EVENT_TYPES } from './changes.js';
import { LimitsError } from './errors.js';
import type { LimitsEvent, PendingChange } from './events.js';
import {
  type Loosening,
  type LooseningPolicy,
  loosenings,
  looseningWaits,
  loosens,
} from './loosening.js';
import { holds, type Scope, scopeOfEvent } from './scopes.js';
import { applyAll, type LimitsState } from './state.js';

/** Who sends a batch: an operator's name and the scopes it holds. */
export interface BatchAuthor {
  readonly name: string;
  /** A subset of `chain`, `limits`, `keys`. */
  readonly scopes: ReadonlyArray<Scope>;
}

/** An operator's batch, as every door of the service takes it. */
export interface OperatorBatch {
  /** The events, applied all or nothing. */
  readonly events: ReadonlyArray<LimitsEvent>;
  /** Who sends them (authenticated by the door they came through). */
  readonly operator: BatchAuthor;
  /**
   * Pass the chain bounds (`Peg-Limits-Override: chain-bounds` over HTTP): for an operator
   * holding both chain and limits who means a jump or a deep reorganization.
   */
  readonly override?: boolean | undefined;
}

/** The rules a batch is held to beside its scopes: the chain bounds and what a loosening waits for. */
export interface BatchRules {
  /** How far one batch may move the tip (default 144 blocks ahead, 6 back). */
  readonly chainBounds?: ChainBounds | undefined;
  /** What a batch that loosens the limits waits for (default: nothing, it applies at once). */
  readonly loosening?: LooseningPolicy | undefined;
}

/**
 * What became of an operator's batch:
 * - `applied`: the state after it, and the events it took (none when nothing changed);
 * - `waiting`: a loosening that waits, held as the pending change `change` (`events` is the
 *   `changeProposed` that holds it), with what it would loosen;
 * - `refused`: nothing applied; `error` says why (its `event` the index of the event at
 *   fault, when one is), and `by` which rule refused it: the operator's (scopes, the
 *   override, events only the service writes, a loosening mixed with others), the chain
 *   bounds, or the state's (an event it cannot take).
 */
export type BatchOutcome =
  | {
      readonly outcome: 'applied';
      readonly state: LimitsState;
      readonly events: ReadonlyArray<LimitsEvent>;
    }
  | {
      readonly outcome: 'waiting';
      readonly state: LimitsState;
      readonly events: ReadonlyArray<LimitsEvent>;
      readonly change: PendingChange;
      readonly loosens: ReadonlyArray<Loosening>;
    }
  | {
      readonly outcome: 'refused';
      readonly by: 'operator' | 'chain-bounds' | 'state';
      readonly error: LimitsError;
    };

/** A refused batch's outcome: why (`error`, with the event's index) and by which rule. */
export type BatchRefused = Extract<BatchOutcome, { readonly outcome: 'refused' }>;

// The events the service writes itself: an operator approves or cancels a pending change, and
// a loosening batch becomes a proposal on its own.
const SERVICE_EVENTS = new Set(['changeProposed', 'changeApproved', 'changeCancelled']);

const NONE: ReadonlyArray<LimitsEvent> = [];

function refusedBy(by: 'operator' | 'chain-bounds' | 'state', error: LimitsError): BatchOutcome {
  return { outcome: 'refused', by, error };
}

/**
 * Decides an operator's batch on `state`: scopes first (nothing of a batch is told to an
 * operator who may not send it), then the chain bounds (unless overridden), then the batch
 * itself, then whether it loosens where loosening waits. Pure: the same state, batch and
 * rules give the same outcome.
 *
 * @example
 * ```ts
 * decideBatch(state, { events: [{ type: 'blockConnected', height: 870_001 }], operator: { name: 'feeder', scopes: ['chain'] } });
 * // { outcome: 'applied', state: …, events: [ … ] }
 * decideBatch(state, { events: [{ type: 'limitsSet', limits: {} }], operator: { name: 'feeder', scopes: ['chain'] } });
 * // { outcome: 'refused', by: 'operator', error: LimitsError { code: 'scope_denied', path: '[0]', event: 0 } }
 * ```
 */
export function decideBatch(
  state: LimitsState,
  batch: OperatorBatch,
  rules: BatchRules = {},
): BatchOutcome {
  const { events, operator } = batch;
  const scopes = eventScopes(state, events);
  for (const [i, event] of events.entries()) {
    if (SERVICE_EVENTS.has(event.type))
      return refusedBy(
        'operator',
        new LimitsError(
          'invalid_event',
          `${event.type} is written by the service: send the batch itself (a loosening waits on its own), and approve or cancel a pending change at /admin/changes/{id}`,
          `[${i}].type`,
          i,
        ),
      );
    const scope = scopes[i];
    if (scope !== undefined && !operator.scopes.includes(scope))
      return refusedBy(
        'operator',
        new LimitsError(
          'scope_denied',
          `${event.type} needs the ${scope} scope; the operator ${JSON.stringify(operator.name)} holds ${operator.scopes.join(', ')}; nothing was applied`,
          `[${i}]`,
          i,
        ),
      );
  }
  if (batch.override === true) {
    if (!holds(operator, ['chain', 'limits']))
      return refusedBy(
        'operator',
        new LimitsError(
          'scope_denied',
          `Peg-Limits-Override: chain-bounds needs both the chain and the limits scopes; the operator ${JSON.stringify(operator.name)} holds ${operator.scopes.join(', ')}`,
        ),
      );
  } else {
    const bounded = checkChainBounds(state, events, rules.chainBounds);
    if (!bounded.ok) return refusedBy('chain-bounds', bounded.error);
  }
  const r = applyAll(state, events);
  if (!r.ok) return refusedBy('state', r.error);
  if (r.state === state) return { outcome: 'applied', state, events: NONE };
  const policy = rules.loosening;
  if (policy !== undefined && looseningWaits(policy)) {
    const waiting = waitingChange(state, r.state, batch, policy, scopes);
    if (waiting !== undefined) return waiting;
  }
  return { outcome: 'applied', state: r.state, events };
}

// The scope each event of a batch needs, the mint history's start followed through the batch
// (lowering it needs `limits`: `scopeOfEvent`).
function eventScopes(
  state: LimitsState,
  events: ReadonlyArray<LimitsEvent>,
): ReadonlyArray<Scope | undefined> {
  let mintFrom = state.mintCompleteFrom;
  return events.map((e) => {
    const scope = scopeOfEvent(e, mintFrom);
    if (e.type === 'mintHistoryCompleteFrom' && typeof e.height === 'number') mintFrom = e.height;
    return scope;
  });
}

// A batch that loosens the limits, made a pending change, or undefined when it does not
// loosen. Chain events never loosen: a batch of them alone is never held, even when a block
// in it brings a pending change due. Mixed with others, the others are judged alone.
function waitingChange(
  state: LimitsState,
  next: LimitsState,
  batch: OperatorBatch,
  policy: LooseningPolicy,
  scopes: ReadonlyArray<Scope | undefined>,
): BatchOutcome | undefined {
  const { events } = batch;
  const own = events.filter((_, i) => scopes[i] !== 'chain');
  if (own.length === 0) return undefined;
  let loosening: boolean;
  if (own.length === events.length) loosening = loosens(state, next);
  else {
    const alone = applyAll(state, own);
    // Cannot tell: fail closed, and ask for the batch in two.
    loosening = !alone.ok || loosens(state, alone.state);
  }
  if (!loosening) return undefined;
  const held = events.findIndex((e) => !CHANGE_EVENT_TYPES.has(e.type));
  if (held >= 0)
    return refusedBy(
      'operator',
      new LimitsError(
        'invalid_change',
        `this batch loosens the limits, so it waits as a pending change, which holds only ${[...CHANGE_EVENT_TYPES].join(', ')} events: send ${events[held]!.type} in a batch of its own`,
        `[${held}].type`,
        held,
      ),
    );
  const proposal: LimitsEvent = {
    type: 'changeProposed',
    events,
    proposedBy: batch.operator.name,
    delayBlocks: policy.delayBlocks,
    quorum: policy.quorum,
  };
  const p = applyAll(state, [proposal]);
  if (!p.ok) return refusedBy('state', p.error);
  const change = p.state.changes[p.state.changes.length - 1]!;
  return {
    outcome: 'waiting',
    state: p.state,
    events: [proposal],
    change,
    // What it loosens, field by field with the value before and after: the approvers read it.
    loosens: loosenings(state, next),
  };
}
