/**
 * The operator's routes (docs/semantics.md, "Operators"): `POST /admin/events`, a batch
 * read from its body and decided at the service's port (`decideBatch`: scopes, chain bounds,
 * a loosening that waits); and the pending changes, listed, approved and cancelled. The
 * handler has authenticated the caller. Pure.
 */
import { located } from '../core/errors.js';
import { loosenedBy } from '../core/loosening.js';
import { holds, type Scope, scopesOf } from '../core/scopes.js';
import { applyAll, type LimitsEvent, type LimitsState, type PendingChange } from '../core/state.js';
import { fromError, json, MAX_EVENTS_BODY, problem, readJson, scopeDenied } from './answers.js';
import { batchAnswer } from './batches.js';
import { eventsFromJson } from './codec.js';
import { operatorActor } from './event-log.js';
import type { BatchRoute, HandleResult, Route } from './messages.js';
import type { Operator } from './operators.js';
import { limitsResponse, unchanged } from './reads.js';

/** `POST /admin/events`: one event or an array of them, as JSON (int64 exact). */
export const EVENTS_BATCH: BatchRoute = {
  read(_state, request) {
    const body = readJson(request, MAX_EVENTS_BODY);
    if (!body.ok) return body;
    const decoded = eventsFromJson(body.value);
    if (!decoded.ok) return { ok: false, response: fromError(400, decoded.error) };
    return { ok: true, events: decoded.events };
  },
};

// An event of a pending change the state refused: the usual refusal of the state's error.
function refused(state: LimitsState, error: Parameters<typeof located>[0]): HandleResult {
  return unchanged(state, batchAnswer({ outcome: 'refused', by: 'state', error }));
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
      actor: operatorActor(caller.name),
    };
  }
  if (settled.outcome === 'applied')
    return {
      state: r.state,
      response: limitsResponse(r.state),
      events: [event],
      actor: operatorActor(caller.name),
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
    actor: operatorActor(caller.name),
  };
});

/** `DELETE /admin/changes/{id}`: an operator cancels a pending change (`changeCancelled`). */
export const cancelRoute = onChange((state, change, caller) => {
  const event: LimitsEvent = { type: 'changeCancelled', id: change.id, by: caller.name };
  const r = applyAll(state, [event]);
  if (!r.ok) return refused(state, r.error);
  return {
    state: r.state,
    response: json(200, change),
    events: [event],
    actor: operatorActor(caller.name),
  };
});

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
