/**
 * The service interface as a pure function (SPEC §4): a request and a state in, a response
 * and the next state out. No sockets, no clocks: the adapters (`createService`, the Fetch
 * handler, `peg-limits serve`) carry requests to it.
 */

import { MAX_AMOUNT } from '../core/amount.js';
import { checkDeposit, checkWithdrawal } from '../core/checks.js';
import type { LimitsError } from '../core/errors.js';
import { equalInConstantTime } from '../core/keys.js';
import { isAccountName } from '../core/limits.js';
import { startThrottle } from '../core/start.js';
import { applyAll, type LimitsEvent, type LimitsState } from '../core/state.js';
import { getAccountLimits, getLimits, windowOf } from '../core/views.js';
import { eventsFromJson } from './codec.js';
import { DASHBOARD_HTML } from './dashboard.js';
import { encodeJson, tryDecodeJson } from './json.js';
import { openApiDocument } from './openapi.js';

/** A request as the handler sees it. `path` may carry a query string, which is ignored. */
export interface HttpRequest {
  readonly method: string;
  readonly path: string;
  /** Header names in any case. */
  readonly headers?:
    | Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
    | undefined;
  /** The body as text or bytes (UTF-8). */
  readonly body?: string | Uint8Array | undefined;
}

/** A response: status, headers (lower-case names) and body text. */
export interface HttpResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** What {@link handleRequest} returns: the next state, the response, and the events it accepted (to journal). */
export interface HandleResult {
  readonly state: LimitsState;
  readonly response: HttpResponse;
  readonly events: ReadonlyArray<LimitsEvent>;
}

/** Options of {@link handleRequest}. */
export interface HandleOptions {
  /** The operator token; `POST /admin/events` answers 404 when it is unset or empty. */
  readonly adminToken?: string | undefined;
  /**
   * Which origins a web page may call the public endpoints from: `'*'` (the default) for
   * any, a list of origins (`https://bridge.example`), or `false` for no CORS headers at
   * all. `POST /admin/events` never gets CORS headers, whatever this says.
   */
  readonly cors?: '*' | ReadonlyArray<string> | false | undefined;
}

/** The largest body `POST /start_throttle` takes. */
export const MAX_THROTTLE_BODY = 16 * 1024;
/** The largest body `POST /admin/events` takes. */
export const MAX_EVENTS_BODY = 1024 * 1024;

/** Codes of the errors only the HTTP layer has. */
export type HttpErrorCode =
  | 'not_found'
  | 'method_not_allowed'
  | 'account_not_found'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'invalid_token'
  | 'internal_error'
  | 'bad_request'
  | 'request_timeout'
  | 'header_too_large'
  | 'store_unavailable'
  | 'write_conflict';

const TITLES: Readonly<Record<string, string>> = {
  not_found: 'Not found',
  method_not_allowed: 'Method not allowed',
  account_not_found: 'The account has no entry',
  payload_too_large: 'Body too large',
  unsupported_media_type: 'Body is not JSON',
  invalid_token: 'Invalid operator token',
  internal_error: 'Internal error',
  invalid_request: 'Invalid request',
  invalid_credentials: 'Invalid credentials',
  key_revoked: 'Throttle key revoked',
  invalid_account: 'Invalid account',
  invalid_amount: 'Invalid amount',
  invalid_json: 'Invalid JSON',
  window_not_found: 'The account has no window of its own',
  bad_request: 'Malformed request',
  request_timeout: 'Request not received in time',
  header_too_large: 'Request head too large',
  store_unavailable: 'Event log out of reach',
  write_conflict: 'Write conflict',
};

// Event errors that say the request conflicts with the state rather than being malformed.
const CONFLICTS = new Set([
  'height_not_above_tip',
  'height_not_below_tip',
  'reorg_too_deep',
  'height_ahead_of_tip',
  'duplicate_withdrawal',
  'unknown_withdrawal',
  'duplicate_key',
  'unknown_key',
]);

const JSON_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' } as const;

function json(status: number, value: unknown): HttpResponse {
  return { status, headers: JSON_HEADERS, body: encodeJson(value) };
}

const DASHBOARD_RESPONSE: HttpResponse = {
  status: 200,
  headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' },
  body: DASHBOARD_HTML,
};

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

const limitsResponse = perState(getLimits);
const windowResponse = perState((state) => windowOf(state));

/** An RFC 9457 problem response. */
export function problem(
  status: number,
  code: string,
  detail: string,
  extra: {
    readonly path?: string | undefined;
    readonly headers?: Readonly<Record<string, string>>;
  } = {},
): HttpResponse {
  const body: Record<string, unknown> = {
    type: `urn:peg-limits:problem:${code}`,
    title: TITLES[code] ?? code.replace(/_/g, ' '),
    status,
    detail,
    code,
    // What clients written for Emily's `ErrorResponse { message }` read.
    message: detail,
  };
  if (extra.path !== undefined) body.path = extra.path;
  return {
    status,
    headers: {
      'content-type': 'application/problem+json',
      'cache-control': 'no-store',
      ...extra.headers,
    },
    body: encodeJson(body),
  };
}

function fromError(status: number, error: LimitsError): HttpResponse {
  return problem(status, error.code, error.message, { path: error.path });
}

/** A request header's value by its lower-case name (names in any case; repeats joined). */
export function headerValue(headers: HttpRequest['headers'], name: string): string | undefined {
  if (headers === undefined) return undefined;
  for (const key of Object.keys(headers)) {
    if (key.toLowerCase() !== name) continue;
    const value = headers[key];
    return typeof value === 'string' ? value : value?.join(', ');
  }
  return undefined;
}

function header(request: HttpRequest, name: string): string | undefined {
  return headerValue(request.headers, name);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

// Reads a JSON body: checks its media type and size, decodes it exactly.
// The 415 for a body not said to be JSON, or undefined when it is.
function notJson(request: HttpRequest): HttpResponse | undefined {
  const type = header(request, 'content-type')?.split(';')[0]?.trim().toLowerCase();
  if (type === 'application/json') return undefined;
  return problem(
    415,
    'unsupported_media_type',
    `expected Content-Type: application/json, got ${type ?? 'none'}`,
  );
}

function readJson(
  request: HttpRequest,
  max: number,
): { ok: true; value: unknown } | { ok: false; response: HttpResponse } {
  const refused = notJson(request);
  if (refused !== undefined) return { ok: false, response: refused };
  const body = request.body ?? '';
  const size =
    typeof body === 'string'
      ? body.length > max
        ? max + 1
        : encoder.encode(body).length
      : body.length;
  if (size > max)
    return {
      ok: false,
      response: problem(413, 'payload_too_large', `the body must be at most ${max} bytes`),
    };
  let text: string;
  try {
    text = typeof body === 'string' ? body : decoder.decode(body);
  } catch {
    return { ok: false, response: problem(400, 'invalid_request', 'the body is not UTF-8') };
  }
  const parsed = tryDecodeJson(text);
  if (!parsed.ok)
    return { ok: false, response: problem(400, 'invalid_request', parsed.error.message) };
  return { ok: true, value: parsed.value };
}

function decodeAccount(segment: string): string | undefined {
  try {
    const account = decodeURIComponent(segment);
    return isAccountName(account) ? account : undefined;
  } catch {
    return undefined;
  }
}

function notAllowed(allow: string): HttpResponse {
  return problem(405, 'method_not_allowed', `this resource answers ${allow} only`, {
    headers: { allow },
  });
}

function startThrottleRoute(state: LimitsState, request: HttpRequest): HandleResult {
  const body = readJson(request, MAX_THROTTLE_BODY);
  if (!body.ok) return { state, response: body.response, events: [] };
  const r = startThrottle(state, body.value);
  if (!r.ok) {
    const status =
      r.error.code === 'invalid_credentials' ? 401 : r.error.code === 'key_revoked' ? 403 : 400;
    return { state, response: fromError(status, r.error), events: [] };
  }
  const events: LimitsEvent[] =
    r.state === state
      ? []
      : [{ type: 'throttleStarted', initiator: r.limits.throttleModeInitiator as string }];
  return { state: r.state, response: json(200, r.limits), events };
}

function adminRoute(state: LimitsState, request: HttpRequest, token: string): HandleResult {
  if (!tokenMatches(request, token)) return { state, response: invalidToken(), events: [] };
  const body = readJson(request, MAX_EVENTS_BODY);
  if (!body.ok) return { state, response: body.response, events: [] };
  const decoded = eventsFromJson(body.value);
  if (!decoded.ok) return { state, response: fromError(400, decoded.error), events: [] };
  const r = applyAll(state, decoded.events);
  if (!r.ok)
    return {
      state,
      response: fromError(CONFLICTS.has(r.error.code) ? 409 : 400, r.error),
      events: [],
    };
  return {
    state: r.state,
    response: limitsResponse(r.state),
    events: r.state === state ? [] : decoded.events,
  };
}

function tokenMatches(request: HttpRequest, token: string): boolean {
  const given = /^Bearer (.+)$/i.exec(header(request, 'authorization') ?? '')?.[1] ?? '';
  return equalInConstantTime(given, token);
}

function invalidToken(): HttpResponse {
  return problem(
    401,
    'invalid_token',
    'a valid operator token is required (Authorization: Bearer <token>)',
    { headers: { 'www-authenticate': 'Bearer' } },
  );
}

/** What an adapter learns before reading a body: the answer already, or how much to read. */
export type RequestAdmission =
  | { readonly ok: true; readonly maxBody: number }
  | { readonly ok: false; readonly response: HttpResponse };

/**
 * Decides, from the method, path and headers alone, how much of a body a request may have:
 * `POST /admin/events` with a missing or wrong operator token, or a body said not to be
 * JSON, is answered without reading a byte of it (`ok: false`, the response
 * {@link handleRequest} would give); otherwise `maxBody` is the most the route takes, 0 for
 * every route that reads no body (their answers never depend on one). A server reads no more than that, so nobody can make it buffer a
 * body before it knows the request is worth one.
 *
 * @example
 * ```ts
 * admitRequest({ method: 'POST', path: '/admin/events', headers: {} }, { adminToken: 't' });
 * // { ok: false, response: { status: 401, … } }
 * ```
 */
export function admitRequest(request: HttpRequest, options: HandleOptions = {}): RequestAdmission {
  const path = request.path.split('?')[0] ?? '';
  const method = request.method.toUpperCase();
  const token = options.adminToken;
  const posts =
    path === '/start_throttle' || (path === '/admin/events' && token !== undefined && token !== '');
  // No other route reads a body: its answer (a read, 404, 405) never depends on one.
  if (!posts || method !== 'POST') return { ok: true, maxBody: 0 };
  if (path === '/admin/events' && !tokenMatches(request, token!))
    return { ok: false, response: invalidToken() };
  const refused = notJson(request);
  if (refused !== undefined) {
    // Answered before the handler runs: a public route's CORS headers are added here.
    return {
      ok: false,
      response: path === '/admin/events' ? refused : withCors(refused, request, options),
    };
  }
  return { ok: true, maxBody: path === '/admin/events' ? MAX_EVENTS_BODY : MAX_THROTTLE_BODY };
}

/**
 * Answers one request of the service interface. Pure: the same state and request always
 * give the same result, and nothing outside is touched. Never throws.
 *
 * | request | success | errors |
 * |---|---|---|
 * | `GET /limits` | 200 Limits | — |
 * | `GET /limits/{account}` | 201 AccountLimits | 404 `account_not_found`, 400 `invalid_account` |
 * | `POST /start_throttle` | 200 Limits | 400, 401, 403, 413, 415 |
 * | `POST /admin/events` | 200 Limits | 400, 401, 404 (no token configured), 409, 413, 415 |
 * | `GET /limits/{account}/withdrawals/{amount}`, `…/deposits/{amount}` | 200 `{ ok, reason, limit, availableAt }` | 400 `invalid_account`, `invalid_amount` |
 * | `GET /window`, `GET /window/{account}` | 200 WindowView | 404 `window_not_found`, 400 |
 * | `GET /` | 200 the operator dashboard (HTML) | — |
 * | `GET /openapi.json` | 200 | — |
 * | `OPTIONS` on a public path | 204 CORS preflight | — |
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
  try {
    const path = request.path.split('?')[0] ?? '';
    const method = request.method.toUpperCase();
    const token = options.adminToken;
    if (path === '/admin/events' && token !== undefined && token !== '') {
      // Never CORS: a page on another origin must not be able to send operator events.
      return method === 'POST'
        ? adminRoute(state, request, token)
        : { state, response: notAllowed('POST'), events: [] };
    }
    const allowed = allowedMethods(path);
    if (allowed === undefined)
      return { state, response: problem(404, 'not_found', `no resource at ${path}`), events: [] };
    const route = publicRoute(
      state,
      path,
      method === 'HEAD' ? 'GET' : method,
      allowed,
      request,
      options,
    );
    return { ...route, response: withCors(route.response, request, options) };
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    return { state, response: problem(500, 'internal_error', message), events: [] };
  }
}

const INVALID_ACCOUNT =
  'the account must be 1 to 256 characters without control characters, percent-encoded';

// The routes anyone may call (and a page on another origin, with CORS).
function publicRoute(
  state: LimitsState,
  path: string,
  method: string,
  allowed: string,
  request: HttpRequest,
  options: HandleOptions,
): HandleResult {
  const unchanged = (response: HttpResponse): HandleResult => ({ state, response, events: [] });
  if (method === 'OPTIONS' && corsOf(options) !== false) return unchanged(preflight(allowed));
  if (!allowed.split(', ').includes(method)) return unchanged(notAllowed(allowed));
  if (path === '/start_throttle') return startThrottleRoute(state, request);
  if (path === '/') return unchanged(DASHBOARD_RESPONSE);
  if (path === '/openapi.json') return unchanged(json(200, openApiDocument));
  if (path === '/limits') return unchanged(limitsResponse(state));
  if (path === '/window') return unchanged(windowResponse(state));
  const parts = path.split('/');
  const account = decodeAccount(parts[2] ?? '');
  if (account === undefined) return unchanged(problem(400, 'invalid_account', INVALID_ACCOUNT));
  if (parts[1] === 'window') {
    const view = windowOf(state, account);
    return unchanged(
      view === undefined
        ? problem(
            404,
            'window_not_found',
            `${JSON.stringify(account)} has no window of its own: the global window applies`,
          )
        : json(200, view),
    );
  }
  if (parts.length === 5) return unchanged(checkResponse(state, account, parts[3]!, parts[4]!));
  const limits = getAccountLimits(state, account);
  if (limits === undefined) {
    return unchanged(
      problem(
        404,
        'account_not_found',
        `${JSON.stringify(account)} has no entry of its own: the global limits apply`,
      ),
    );
  }
  return unchanged(json(201, limits));
}

/** The methods a public path answers, or undefined when there is no such resource. */
function allowedMethods(path: string): string | undefined {
  if (path === '/start_throttle') return 'POST';
  if (path === '/' || path === '/openapi.json' || path === '/limits' || path === '/window')
    return 'GET';
  const parts = path.split('/');
  // An empty or malformed account is the resource's own error (400), not a missing one.
  if (parts[1] === 'window' && parts.length === 3) return 'GET';
  if (parts[1] !== 'limits') return undefined;
  if (parts.length === 3) return 'GET';
  if (parts.length === 5 && (parts[3] === 'withdrawals' || parts[3] === 'deposits')) return 'GET';
  return undefined;
}

const AMOUNT_TEXT = /^[0-9]{1,19}$/;

// GET /limits/{account}/withdrawals/{amount} and …/deposits/{amount}: the verdict as data.
function checkResponse(
  state: LimitsState,
  account: string,
  kind: string,
  text: string,
): HttpResponse {
  const amount = AMOUNT_TEXT.test(text) ? BigInt(text) : undefined;
  if (amount === undefined || amount < 1n || amount > MAX_AMOUNT) {
    return problem(
      400,
      'invalid_amount',
      `the amount must be an integer from 1 to 2^63−1 in the smallest unit, got ${JSON.stringify(text.slice(0, 40))}`,
    );
  }
  const request = { account, amount };
  const v = kind === 'withdrawals' ? checkWithdrawal(state, request) : checkDeposit(state, request);
  return json(
    200,
    v.ok
      ? { ok: true, reason: null, limit: null, availableAt: null }
      : { ok: false, reason: v.reason, limit: v.limit, availableAt: v.availableAt ?? null },
  );
}

function corsOf(options: HandleOptions): '*' | ReadonlyArray<string> | false {
  return options.cors ?? '*';
}

function preflight(allowed: string): HttpResponse {
  return {
    status: 204,
    headers: {
      'access-control-allow-methods': `${allowed}, OPTIONS`,
      'access-control-allow-headers': 'content-type',
      'access-control-max-age': '600',
    },
    body: '',
  };
}

// Adds the CORS headers a public route's response carries for the request's origin.
function withCors(
  response: HttpResponse,
  request: HttpRequest,
  options: HandleOptions,
): HttpResponse {
  const cors = corsOf(options);
  if (cors === false) return response;
  if (cors === '*')
    return { ...response, headers: { ...response.headers, 'access-control-allow-origin': '*' } };
  const origin = header(request, 'origin');
  const headers: Record<string, string> = { ...response.headers, vary: 'origin' };
  if (origin !== undefined && cors.includes(origin))
    headers['access-control-allow-origin'] = origin;
  return { ...response, headers };
}
