/**
 * The service interface as a pure function (the README, "The service"): a request and a state in, a response
 * and the next state out. No sockets, no clocks: the adapters (`createService`, the Fetch
 * handler, `peg-limits serve`) carry requests to it. The routes themselves are a table
 * (`routes.ts`); this module admits a request against it and answers it.
 */

import { type BatchOutcome, decideBatch } from '../core/operator-batch.js';
import type { LimitsState } from '../core/state.js';
import { header, notAllowed, notJson, problem } from './answers.js';
import { type ReadBatch, readBatch } from './batches.js';
import type {
  HandleOptions,
  HandleResult,
  HttpRequest,
  HttpResponse,
  PathMatch,
  Route,
} from './messages.js';
import { authenticate, type Operator, operatorsByHash } from './operators.js';
import { routeFor, routeTable } from './route-match.js';
import { addVary, conditional, withValidators } from './validators.js';

export { type HttpErrorCode, headerValue, problem } from './answers.js';
export type {
  HandleOptions,
  HandleResult,
  HttpRequest,
  HttpResponse,
  Notice,
  Readiness,
} from './messages.js';

/** What an adapter learns before reading a body: the answer already, or how much to read. */
type RequestAdmission =
  | {
      readonly ok: true;
      readonly maxBody: number;
      /**
       * The path matched against the route table (undefined: no such resource). Passed on
       * as the request's `match`, so that the handler does not match it again.
       */
      readonly match: PathMatch | undefined;
    }
  | { readonly ok: false; readonly response: HttpResponse };

function registryOf(options: HandleOptions) {
  return operatorsByHash(options.operators, options.adminToken);
}

function operatorOn(options: HandleOptions): boolean {
  return registryOf(options).size > 0;
}

// The operators are looked at only for a request an operator route answers: a read pays
// nothing. Without any operator, the operator routes do not exist (404, or 405 where the
// path has public routes too).
function matchOf(request: HttpRequest, options: HandleOptions): PathMatch | undefined {
  if (request.match !== undefined) return request.match;
  const match = routeTable(options.routes)(request.path, true);
  if (match === undefined || match.public === match) return match;
  const route = routeFor(match, request.method.toUpperCase());
  if (route !== undefined && route.access !== 'operator') return match;
  return operatorOn(options) ? match : match.public;
}

/**
 * The route pattern a request's path matches (the metrics' label: never the raw path), as
 * the table and the operators in force say; `undefined` for a path of no route.
 */
export function routePatternOf(request: HttpRequest, options: HandleOptions): string | undefined {
  return matchOf(request, options)?.pattern;
}

/**
 * Decides, from the method, path and headers alone, how much of a body a request may have:
 * `POST /admin/events` with a missing, malformed or unknown operator token, or a body said
 * not to be JSON, is answered without reading a byte of it (`ok: false`, the response
 * {@link handleRequest} would give); otherwise `maxBody` is the most the route takes, 0 for
 * every route that reads no body (their answers never depend on one). A server reads no
 * more than that, so nobody can make it buffer a body before it knows the request is worth
 * one.
 *
 * @example
 * ```ts
 * admitRequest({ method: 'POST', path: '/admin/events', headers: {} }, { adminToken: 't' });
 * // { ok: false, response: { status: 401, … } }
 * ```
 */
export function admitRequest(request: HttpRequest, options: HandleOptions = {}): RequestAdmission {
  const match = matchOf(request, options);
  const route = match === undefined ? undefined : routeFor(match, request.method.toUpperCase());
  // No other request reads a body: its answer (a read, 404, 405) never depends on one.
  if (route === undefined || route.maxBody === 0) return { ok: true, maxBody: 0, match };
  if (route.access === 'operator') {
    const auth = authenticate(request, registryOf(options));
    if (!auth.ok) return { ok: false, response: auth.response };
  }
  const refused = notJson(request, route.text === true);
  if (refused !== undefined) {
    // Answered before the handler runs: a public route's CORS headers are added here.
    return { ok: false, response: answerOf(route, refused, request, options, false) };
  }
  return { ok: true, maxBody: route.maxBody, match };
}

/**
 * Answers one request of the service interface. Pure: the same state and request always
 * give the same result, and nothing outside is touched. Never throws. The routes are the
 * table of `routes.ts`:
 *
 * | request | success | errors |
 * |---|---|---|
 * | `GET /limits` | 200 Limits | — |
 * | `GET /limits/{account}` | 201 AccountLimits | 404 `account_not_found`, 400 `invalid_account` |
 * | `POST /start_throttle` | 200 Limits | 400, 401, 403, 413, 415 |
 * | `POST /admin/events` | 200 Limits; 202 the pending change a loosening became | 400, 401, 403 `scope_denied`, 404 (no operator configured), 409, 413, 415 |
 * | `GET /admin/changes` | 200 the pending changes | 401 |
 * | `POST /admin/changes/{id}/approve` | 200 the change, or the Limits once it applied | 400, 401, 403, 404 `change_not_found`, 409 `change_dropped` |
 * | `DELETE /admin/changes/{id}` | 200 the cancelled change | 400, 401, 403, 404 |
 * | `GET /limits/{account}/withdrawals/{amount}`, `…/deposits/{amount}` | 200 `{ ok, reason, limit, availableAt }` | 400 `invalid_account`, `invalid_amount` |
 * | `GET /window`, `GET /window/{account}` | 200 WindowView | 404 `window_not_found`, 400 |
 * | `GET /` | 200 the operator dashboard (HTML) | — |
 * | `GET /openapi.json` | 200 | — |
 * | `HEAD` on a `GET` route | the `GET` answer (an adapter sends no body) | — |
 * | `OPTIONS` on a public path | 204 CORS preflight (405 with CORS off) | — |
 *
 * @example
 * ```ts
 * const { state: next, response, events } = handleRequest(state, { method: 'GET', path: '/limits' });
 * response.status; // 200
 * JSON.parse(response.body).availableToWithdraw;
 * ```
 */
export function handleRequest(
  state: LimitsState,
  request: HttpRequest,
  options: HandleOptions = {},
): HandleResult {
  const taken = takeRequest(state, request, options);
  if (taken.kind === 'answered') return taken.result;
  if (taken.kind === 'served') {
    const path = request.path.split('?')[0] ?? '';
    return unanswered(state, problem(404, 'not_found', `no resource at ${path}`));
  }
  return batchResult(state, taken.read, decideBatch(state, taken.read.batch, options));
}

/**
 * How a request is taken on `state`: answered already (a read, a change computed on the
 * state, or a refusal before any work), an operator's batch to decide at the service's port
 * (`read`: the batch and the answer of each outcome), or a route its adapter serves itself
 * (`route`, with the operator its token named). Never throws.
 */
export function takeRequest(
  state: LimitsState,
  request: HttpRequest,
  options: HandleOptions,
):
  | { readonly kind: 'answered'; readonly result: HandleResult }
  | { readonly kind: 'batch'; readonly read: ReadBatch }
  | {
      readonly kind: 'served';
      readonly route: Route;
      readonly operator: Operator | undefined;
      readonly answer: (response: HttpResponse) => HttpResponse;
    } {
  try {
    const match = matchOf(request, options);
    if (match === undefined) {
      const path = request.path.split('?')[0] ?? '';
      return answered(state, problem(404, 'not_found', `no resource at ${path}`));
    }
    const method = request.method.toUpperCase();
    const route = routeFor(match, method);
    const first = match.routes[0]!;
    if (route === undefined) {
      // A preflight on a public path; anything else is a method the path does not answer.
      const response =
        method === 'OPTIONS' && first.access === 'public' && corsOf(options) !== false
          ? preflight(match.methods)
          : notAllowed(match.allow);
      return answered(state, answerOf(first, response, request, options, false));
    }
    // An operator route checks its token again: the handler is also called without admission.
    let operator: Operator | undefined;
    if (route.access === 'operator') {
      const auth = authenticate(request, registryOf(options));
      if (!auth.ok) return answered(state, auth.response);
      operator = auth.operator;
    }
    const answer = (response: HttpResponse) => answerOf(route, response, request, options, true);
    if (route.serve !== undefined) return { kind: 'served', route, operator, answer };
    if (route.batch !== undefined) {
      const read = readBatch(route.batch, state, request, match.params, operator!);
      if (!read.ok) return answered(state, answer(read.response));
      return {
        kind: 'batch',
        read: { batch: read.read.batch, answer: (o) => answer(read.read.answer(o)) },
      };
    }
    const result = route.handle!(state, request, match.params, options, operator);
    return { kind: 'answered', result: { ...result, response: answer(result.response) } };
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    return answered(state, problem(500, 'internal_error', message));
  }
}

/**
 * Whether a request is for a route its adapter serves itself (`Route.serve`): answered
 * outside the queue of changes, from the path and method alone.
 */
export function servesItself(request: HttpRequest, options: HandleOptions): boolean {
  const match = matchOf(request, options);
  const route = match === undefined ? undefined : routeFor(match, request.method.toUpperCase());
  return route?.serve !== undefined;
}

function unanswered(state: LimitsState, response: HttpResponse): HandleResult {
  return { state, response, events: [] };
}

function answered(state: LimitsState, response: HttpResponse) {
  return { kind: 'answered', result: unanswered(state, response) } as const;
}

/**
 * What a batch's outcome makes of a request: the state after it and the events to record
 * (none when refused), answered as the route answers that outcome.
 */
export function batchResult(
  state: LimitsState,
  read: ReadBatch,
  outcome: BatchOutcome,
): HandleResult {
  const response = read.answer(outcome);
  if (outcome.outcome === 'refused') return unanswered(state, response);
  return {
    state: outcome.state,
    response,
    events: outcome.events,
    actor: { kind: 'operator', name: read.batch.operator.name },
  };
}

// What a page on another origin may read of a public answer: the body, and the log position
// (a client sends it back as Peg-Limits-Min-Position to read its own writes).
const ANY_ORIGIN = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'peg-limits-position, etag',
} as const;

// A public answer for any origin, made once per answer: the answers of reads are kept per
// state, so a read of an unchanged state costs no new object here.
const anyOrigin = new WeakMap<HttpResponse, HttpResponse>();
function withAnyOrigin(response: HttpResponse): HttpResponse {
  let answer = anyOrigin.get(response);
  if (answer === undefined) {
    answer = { ...response, headers: { ...response.headers, ...ANY_ORIGIN } };
    anyOrigin.set(response, answer);
  }
  return answer;
}

function corsOf(options: HandleOptions): '*' | ReadonlyArray<string> | false {
  return options.cors ?? '*';
}

function preflight(allowed: string): HttpResponse {
  return {
    status: 204,
    headers: {
      'access-control-allow-methods': `${allowed}, OPTIONS`,
      'access-control-allow-headers': 'content-type, peg-limits-min-position, if-none-match',
      'access-control-max-age': '600',
    },
    body: '',
  };
}

// A route's answer with the CORS headers it carries for the request's origin: a public
// route's, as configured; an operator route's never (a page on another origin must not be
// able to send operator events). A public read's own answer (`own`) carries what lets an
// HTTP cache hold it, and is a 304 when the request's validator matches.
function answerOf(
  route: Route,
  response: HttpResponse,
  request: HttpRequest,
  options: HandleOptions,
  own: boolean,
): HttpResponse {
  const cacheable = own && route.cacheable === true;
  const read = cacheable ? withValidators(response, request, options.cacheMaxAge ?? 0) : response;
  const answer = withCors(route, read, request, options);
  return cacheable ? conditional(answer, request) : answer;
}

function withCors(
  route: Route,
  response: HttpResponse,
  request: HttpRequest,
  options: HandleOptions,
): HttpResponse {
  const cors = corsOf(options);
  if (route.access !== 'public' || cors === false) return response;
  if (cors === '*') return withAnyOrigin(response);
  const origin = header(request, 'origin');
  // The answer differs by origin: a shared cache keys it on the request's Origin.
  const headers: Record<string, string> = {
    ...response.headers,
    vary: addVary(response.headers.vary, 'origin'),
  };
  if (origin !== undefined && cors.includes(origin)) {
    headers['access-control-allow-origin'] = origin;
    headers['access-control-expose-headers'] = ANY_ORIGIN['access-control-expose-headers'];
  }
  return { ...response, headers };
}
