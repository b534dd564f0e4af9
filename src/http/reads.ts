/**
 * The answers of reads: a read changes nothing, and its body is encoded once per state (a
 * state is immutable). Shared by the route table and the operator's routes. Pure.
 */
import type { LimitsState } from '../core/state.js';
import { getLimits, windowOf } from '../core/views.js';
import { json } from './answers.js';
import type { HandleResult, HttpResponse } from './messages.js';

/** An answer that leaves the state as it is and journals nothing. */
export const unchanged = (state: LimitsState, response: HttpResponse): HandleResult => ({
  state,
  response,
  events: [],
});

// A state is immutable, so a read's body is encoded once per state: with many account
// entries, encoding is most of the work of an answer.
function perState(view: (state: LimitsState) => unknown): (state: LimitsState) => HttpResponse {
  const bodies = new WeakMap<LimitsState, HttpResponse>();
  return (state) => {
    let response = bodies.get(state);
    if (response === undefined) {
      response = json(200, view(state));
      bodies.set(state, response);
    }
    return response;
  };
}

/** `GET /limits` of a state, made once per state. */
export const limitsResponse = perState(getLimits);
/** `GET /window` of a state, made once per state. */
export const windowResponse = perState((state) => windowOf(state));
