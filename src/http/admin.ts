/**
 * The operator's routes (docs/semantics.md, "Operators"): `POST /admin/events`, where each
 * event needs a scope of the caller, the chain bounds hold unless overridden, and a batch
 * that loosens the limits becomes a pending change where loosening waits; and the pending
 * changes, listed, approved and cancelled. The handler has authenticated the caller. Pure.
 */
import { checkChainBounds } from '../core/bounds.js';
import { CHANGE_EVENT_TYPES } from '../core/changes.js';
import { type LimitsError, located } from '../core/errors.js';
import { loosenedBy, loosenings, looseningWaits, loosens, NO_WAITING } from '../core/loosening.js';
import { type Scope, scopeOf, scopesOf } from '../core/scopes.js';
import { applyAll, type LimitsEvent, type LimitsState, type PendingChange } from '../core/state.js';
import {
  CONFLICTS,
  detailOf,
  fromError,
  header,
  json,
  MAX_EVENTS_BODY,
  problem,
  readJson,
} from './answers.js';
import { eventsFromJson } from './codec.js';
import type { AuditActor } from './event-log.js';
import type {
  HandleOptions,
  HandleResult,
  HttpRequest,
  HttpResponse,
  Route,
  RouteParams,
} from './messages.js';
import { holds, type Operator } from './operators.js';
import { handedToServer } from './public-routes.js';
import { limitsResponse, unchanged } from './reads.js';

// What a failed batch answers: a conflict with the state is 409, a malformed event 400; and,
// for the service's in-process callers, which event it was, as data.
function refused(state: LimitsState, error: LimitsError): HandleResult {
  return unchanged(
    state,
    withRefusal(fromError(CONFLICTS.has(error.code) ? 409 : 400, error), error),
  );
}

// The answer with the event the error is about, its code and the answer's detail, as data.
function withRefusal(response: HttpResponse, error: LimitsError, detail = detailOf(error)) {
  if (error.event === undefined) return response;
  return { ...response, refused: { event: error.event, code: error.code, detail } };
}

const OVERRIDE = 'chain-bounds';
// The events the service writes itself: an operator approves or cancels at /admin/changes,
// and a loosening batch becomes a proposal on its own.
const SERVICE_EVENTS = new Set(['changeProposed', 'changeApproved', 'changeCancelled']);

// The operator as the audit trail names it.
function actorOf(caller: Operator): AuditActor {
  return { kind: 'operator', name: caller.name };
}

/** 403 `scope_denied`: the operator does not hold a scope the request needs. */
export function scopeDenied(message: string, path?: string): HttpResponse {
  return problem(403, 'scope_denied', message, { path });
}

/**
 * The token was checked at admission (see `admitRequest`), and again by the handler, which
 * hands the operator it names to the route.
 */
export function eventsRoute(
  state: LimitsState,
  request: HttpRequest,
  _params: RouteParams,
  options: HandleOptions,
  operator: Operator | undefined,
): HandleResult {
  const body = readJson(request, MAX_EVENTS_BODY);
  if (!body.ok) return unchanged(state, body.response);
  const decoded = eventsFromJson(body.value);
  if (!decoded.ok) return unchanged(state, fromError(400, decoded.error));
  return operatorBatch(state, decoded.events, request, options, operator!).result;
}

/**
 * What became of an operator's batch: `applied` (200, the Limits after it), `waiting` (202,
 * the pending change a loosening became) or `refused` (its problem; nothing applied).
 */
export interface BatchOutcome {
  readonly outcome: 'applied' | 'waiting' | 'refused';
  readonly result: HandleResult;
  /** Why the state refused the batch, when it did (not a rule of the operators). */
  readonly error?: LimitsError | undefined;
}

/**
 * One batch of an operator, under every operator rule: the scope of each event, the chain
 * bounds (unless the request carries `Peg-Limits-Override: chain-bounds` from an operator
 * holding chain and limits), a loosening that waits, and the operator as the actor the
 * trail records. Every route that writes for an operator (`POST /admin/events`, Emily's
 * private paths) goes through it.
 */
export function operatorBatch(
  state: LimitsState,
  events: ReadonlyArray<LimitsEvent>,
  request: HttpRequest,
  options: HandleOptions,
  caller: Operator,
): BatchOutcome {
  const refusal = (result: HandleResult): BatchOutcome => ({ outcome: 'refused', result });
  // Scopes first: nothing about a batch is told to an operator who may not send it.
  for (const [i, event] of events.entries()) {
    if (SERVICE_EVENTS.has(event.type))
      return refusal(
        unchanged(
          state,
          problem(
            400,
            'invalid_event',
            `event ${i}: ${event.type} is written by the service: send the batch itself (a loosening waits on its own), and approve or cancel a pending change at /admin/changes/{id}`,
            { path: `[${i}].type` },
          ),
        ),
      );
    const scope = scopeOf(event.type);
    if (scope !== undefined && !caller.scopes.includes(scope))
      return refusal(
        unchanged(
          state,
          scopeDenied(
            `event ${i} (${event.type}) needs the ${scope} scope; the operator ${JSON.stringify(caller.name)} holds ${caller.scopes.join(', ')}; nothing was applied`,
            `[${i}]`,
          ),
        ),
      );
  }
  const override = header(request, 'peg-limits-override');
  if (override !== undefined) {
    if (override.trim().toLowerCase() !== OVERRIDE)
      return refusal(
        unchanged(
          state,
          problem(
            400,
            'bad_request',
            `Peg-Limits-Override takes "${OVERRIDE}", got ${JSON.stringify(override.slice(0, 40))}`,
          ),
        ),
      );
    if (!holds(caller, ['chain', 'limits']))
      return refusal(
        unchanged(
          state,
          scopeDenied(
            `Peg-Limits-Override: ${OVERRIDE} needs both the chain and the limits scopes; the operator ${JSON.stringify(caller.name)} holds ${caller.scopes.join(', ')}`,
          ),
        ),
      );
  } else {
    const bounded = checkChainBounds(state, events, options.chainBounds);
    if (!bounded.ok) {
      const e = bounded.error;
      const detail = `${located(e)}; nothing was applied. An operator holding chain and limits who means it sends the batch with Peg-Limits-Override: ${OVERRIDE}`;
      return refusal({
        ...unchanged(state, withRefusal(problem(409, e.code, detail, { path: e.path }), e, detail)),
        // An emergency, not traffic: the operators hear of it.
        notice: {
          type: 'chainBoundRefused',
          actor: actorOf(caller),
          path: e.path,
          detail: located(e),
        },
      });
    }
  }
  const r = applyAll(state, events);
  if (!r.ok) return { outcome: 'refused', result: refused(state, r.error), error: r.error };
  if (r.state === state)
    return { outcome: 'applied', result: { state, response: limitsResponse(state), events: [] } };
  const policy = options.loosening ?? NO_WAITING;
  if (looseningWaits(policy)) {
    const proposal = waitingChange(state, r.state, events, caller, policy);
    if (proposal !== undefined) return proposal;
  }
  return {
    outcome: 'applied',
    result: {
      state: r.state,
      response: limitsResponse(r.state),
      events,
      actor: actorOf(caller),
    },
  };
}

// A batch that loosens the limits, made a pending change (202), or undefined when it does
// not loosen. Chain events never loosen: a batch of them alone is never held, even when a
// block in it brings a pending change due. Mixed with others, the others are judged alone.
function waitingChange(
  state: LimitsState,
  next: LimitsState,
  events: ReadonlyArray<LimitsEvent>,
  caller: Operator,
  policy: NonNullable<HandleOptions['loosening']>,
): BatchOutcome | undefined {
  const own = events.filter((e) => scopeOf(e.type) !== 'chain');
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
    return {
      outcome: 'refused',
      result: unchanged(
        state,
        problem(
          400,
          'invalid_change',
          `event ${held}: this batch loosens the limits, so it waits as a pending change, which holds only ${[...CHANGE_EVENT_TYPES].join(', ')} events: send ${events[held]!.type} in a batch of its own`,
          { path: `[${held}].type` },
        ),
      ),
    };
  const proposal: LimitsEvent = {
    type: 'changeProposed',
    events,
    proposedBy: caller.name,
    delayBlocks: policy.delayBlocks,
    quorum: policy.quorum,
  };
  const p = applyAll(state, [proposal]);
  if (!p.ok) return { outcome: 'refused', result: refused(state, p.error) };
  const change = p.state.changes[p.state.changes.length - 1]!;
  return {
    outcome: 'waiting',
    result: {
      state: p.state,
      // What it loosens, field by field with the value before and after: the approvers read it.
      response: json(202, { ...change, loosens: loosenings(state, next) }),
      events: [proposal],
      actor: actorOf(caller),
    },
  };
}

const CHANGE_ID = /^[1-9][0-9]{0,15}$/;

// A route on one pending change: its id read, the change found, the caller's scopes checked.
function onChange(
  answer: (state: LimitsState, change: PendingChange, caller: Operator) => HandleResult,
): Route['handle'] {
  return (state, _request, params, _options, operator) => {
    const text = params.id ?? '';
    const id = CHANGE_ID.test(text) ? Number(text) : undefined;
    if (id === undefined || !Number.isSafeInteger(id))
      return unchanged(
        state,
        problem(
          400,
          'invalid_change_id',
          `a change id is a positive integer, got ${JSON.stringify(text.slice(0, 40))}`,
        ),
      );
    const change = state.changes.find((c) => c.id === id);
    if (change === undefined)
      return unchanged(
        state,
        problem(
          404,
          'change_not_found',
          `no pending change ${id}: it was never proposed, or it applied, was dropped or was cancelled`,
        ),
      );
    const needed: ReadonlyArray<Scope> = scopesOf(change.events);
    const caller = operator!;
    if (!holds(caller, needed))
      return unchanged(
        state,
        scopeDenied(
          `change ${id} needs the ${needed.join(' and ')} scope${needed.length > 1 ? 's' : ''}; the operator ${JSON.stringify(caller.name)} holds ${caller.scopes.join(', ')}`,
        ),
      );
    return answer(state, change, caller);
  };
}

/** `POST /admin/changes/{id}/approve`: an operator approves a pending change (`changeApproved`). */
export const approveRoute = onChange((state, change, caller) => {
  const event: LimitsEvent = { type: 'changeApproved', id: change.id, by: caller.name };
  const r = applyAll(state, [event]);
  if (!r.ok) return refused(state, r.error);
  // Approved already: nothing changes, the change as it is.
  if (r.state === state) return unchanged(state, json(200, change));
  const settled = r.settled.find((x) => x.change.id === change.id);
  if (settled === undefined) {
    const approved = r.state.changes.find((c) => c.id === change.id)!;
    return {
      state: r.state,
      response: json(200, approved),
      events: [event],
      actor: actorOf(caller),
    };
  }
  if (settled.outcome === 'applied')
    return {
      state: r.state,
      response: limitsResponse(r.state),
      events: [event],
      actor: actorOf(caller),
    };
  // The quorum was reached but the batch no longer applies: it is dropped, and said why.
  return {
    state: r.state,
    response: problem(
      409,
      'change_dropped',
      `change ${change.id} reached its quorum but no longer applies, so it was dropped: ${settled.error === undefined ? 'refused' : located(settled.error)}`,
      { path: settled.error?.path },
    ),
    events: [event],
    actor: actorOf(caller),
  };
});

/** `DELETE /admin/changes/{id}`: an operator cancels a pending change (`changeCancelled`). */
export const cancelRoute = onChange((state, change, caller) => {
  const event: LimitsEvent = { type: 'changeCancelled', id: change.id, by: caller.name };
  const r = applyAll(state, [event]);
  if (!r.ok) return refused(state, r.error);
  return { state: r.state, response: json(200, change), events: [event], actor: actorOf(caller) };
});

/**
 * `/admin/held`: the blocks a Stacks observer holds past the chain bounds, listed, released
 * or dropped, by an operator holding chain and limits (the same power as the override).
 */
export function heldRoute(op: 'list' | 'release' | 'drop'): Route['handle'] {
  return (state, _request, _params, _options, operator) => {
    const caller = operator!;
    if (!holds(caller, ['chain', 'limits']))
      return unchanged(
        state,
        scopeDenied(
          `the held blocks need both the chain and the limits scopes; the operator ${JSON.stringify(caller.name)} holds ${caller.scopes.join(', ')}`,
        ),
      );
    return handedToServer(
      state,
      'no held blocks here: only the Stacks observer of `peg-limits serve --stacks-observer` holds blocks',
      { held: { op, by: caller.name } },
    );
  };
}

/**
 * The pending changes as `GET /admin/changes` lists them: each with what it would loosen if
 * it applied on the state now, field by field (`loosens`).
 */
export function changesListing(state: LimitsState): ReadonlyArray<unknown> {
  return state.changes.map((change) => ({
    ...change,
    loosens: loosenedBy(state, change.events, applyAll),
  }));
}

/** The most records one `GET /admin/audit` answers with, and how many it gives unasked. */
const MAX_AUDIT_LIMIT = 10_000;
const DEFAULT_AUDIT_LIMIT = 1_000;

// `after` (default 0: from the first record) and `limit` of GET /admin/audit.
function auditQuery(
  path: string,
): { ok: true; after: number; limit: number } | { ok: false; response: HttpResponse } {
  const q = path.indexOf('?');
  const params = new URLSearchParams(q < 0 ? '' : path.slice(q + 1));
  const read = (name: string, fallback: number, max: number) => {
    const text = params.get(name);
    if (text === null) return fallback;
    return /^[0-9]{1,16}$/.test(text) && Number(text) <= max ? Number(text) : undefined;
  };
  const after = read('after', 0, Number.MAX_SAFE_INTEGER);
  const limit = read('limit', DEFAULT_AUDIT_LIMIT, MAX_AUDIT_LIMIT);
  if (after === undefined || limit === undefined) {
    // Only what was sent and is wrong is named.
    const wrong = [
      after === undefined
        ? `after must be a non-negative integer (a log position), got ${JSON.stringify(params.get('after')?.slice(0, 20))}`
        : undefined,
      limit === undefined
        ? `limit must be an integer from 0 to ${MAX_AUDIT_LIMIT}, got ${JSON.stringify(params.get('limit')?.slice(0, 20))}`
        : undefined,
    ].filter((w) => w !== undefined);
    return { ok: false, response: problem(400, 'bad_request', wrong.join('; ')) };
  }
  return { ok: true, after, limit };
}

/**
 * `GET /admin/audit`, admitted: the records asked for (`audit`), for an adapter whose log
 * keeps a trail; the answer of one that keeps none.
 */
export const auditRoute: Route['handle'] = (state, request) => {
  const query = auditQuery(request.path);
  if (!query.ok) return unchanged(state, query.response);
  return handedToServer(
    state,
    'no audit trail here: this service keeps none (`peg-limits serve` keeps one)',
    { audit: query },
  );
};
