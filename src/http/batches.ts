/**
 * An operator's batch over HTTP: a batch route's request read into the {@link OperatorBatch}
 * every door shares (the events, the operator its token named, the `Peg-Limits-Override`
 * header), and the outcome the service's port decided answered in HTTP: 200 with the Limits
 * (or the route's own answer), 202 with the pending change a loosening became, or the
 * problem of a refusal (403 for a scope, 409 for a conflict with the state or the chain
 * bounds, 400 otherwise). Pure.
 */
import { type LimitsError, located } from '../core/errors.js';
import type { BatchOutcome, BatchRefused, OperatorBatch } from '../core/operator-batch.js';
import type { LimitsState } from '../core/state.js';
import { CONFLICTS, detailOf, fromError, header, json, problem } from './answers.js';
import type { BatchRoute, HttpRequest, HttpResponse, Operator, RouteParams } from './messages.js';
import { limitsResponse } from './reads.js';

/** What `Peg-Limits-Override` takes: pass the chain bounds. */
const OVERRIDE = 'chain-bounds';

/** A batch route's request, read: the batch to decide, and how to answer its outcome. */
export interface ReadBatch {
  readonly batch: OperatorBatch;
  answer(outcome: BatchOutcome): HttpResponse;
}

/**
 * Reads a batch route's request on `state` for `operator` (its token checked already): the
 * batch, with the override its header asks for, and the answer of each outcome; or the answer
 * refusing the request (a malformed body, a malformed override header).
 */
export function readBatch(
  route: BatchRoute,
  state: LimitsState,
  request: HttpRequest,
  params: RouteParams,
  operator: Operator,
):
  | { readonly ok: true; readonly read: ReadBatch }
  | { readonly ok: false; readonly response: HttpResponse } {
  const r = route.read(state, request, params);
  if (!r.ok) return r;
  const given = header(request, 'peg-limits-override');
  if (given !== undefined && given.trim().toLowerCase() !== OVERRIDE)
    return {
      ok: false,
      response: problem(
        400,
        'bad_request',
        `Peg-Limits-Override takes "${OVERRIDE}", got ${JSON.stringify(given.slice(0, 40))}`,
      ),
    };
  const { applied, refused } = r;
  return {
    ok: true,
    read: {
      batch: { events: r.events, operator, override: given !== undefined },
      answer: (outcome) => {
        if (outcome.outcome === 'refused') return refused?.(outcome) ?? refusalAnswer(outcome);
        if (outcome.outcome === 'applied' && applied !== undefined) return applied(outcome.state);
        return batchAnswer(outcome);
      },
    },
  };
}

/**
 * The usual answer of an outcome (`POST /admin/events`'s): 200 with the Limits after a batch
 * that applied, 202 with the pending change a loosening became (and what it loosens, field by
 * field), or the problem of a refusal.
 */
export function batchAnswer(outcome: BatchOutcome): HttpResponse {
  if (outcome.outcome === 'refused') return refusalAnswer(outcome);
  if (outcome.outcome === 'applied') return limitsResponse(outcome.state);
  return json(202, { ...outcome.change, loosens: outcome.loosens });
}

/** What a refusal's problem says: where and what (and, past the chain bounds, how to pass them). */
export function refusalDetail(outcome: BatchRefused): string {
  if (outcome.by === 'chain-bounds')
    return `${located(outcome.error)}; nothing was applied. An operator holding chain and limits who means it sends the batch with Peg-Limits-Override: ${OVERRIDE}`;
  return outcome.by === 'state' ? detailOf(outcome.error) : located(outcome.error);
}

/** The status of a refusal: 403 for a scope, 409 for a conflict with the state or the bounds, else 400. */
export function refusalStatus(error: LimitsError): number {
  if (error.code === 'scope_denied') return 403;
  return CONFLICTS.has(error.code) ? 409 : 400;
}

// A refused batch's problem.
function refusalAnswer(outcome: BatchRefused): HttpResponse {
  const e = outcome.error;
  return outcome.by === 'state'
    ? fromError(refusalStatus(e), e)
    : problem(refusalStatus(e), e.code, refusalDetail(outcome), { path: e.path });
}
