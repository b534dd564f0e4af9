/**
 * The route table: every resource of the service once, with its method, path pattern,
 * access (public, operator or ops), body cap and answer. Admission, the handler, the adapters,
 * the OpenAPI document's test and the metrics' route labels all read it; a request's path
 * is matched against it once ({@link matchPath}). Pure.
 */

import { MAX_AMOUNT } from '../core/amount.js';
import { checkDeposit, checkWithdrawal } from '../core/checks.js';
import { startThrottle } from '../core/start-throttle.js';
import type { LimitsEvent, LimitsState } from '../core/state.js';
import { getAccountLimits, windowOf } from '../core/views.js';
import { approveRoute, cancelRoute, changesListing, eventsRoute, heldRoute } from './admin.js';
import {
  accountOf,
  fromError,
  INVALID_ACCOUNT,
  json,
  MAX_BLOCK_BODY,
  MAX_EVENTS_BODY,
  MAX_THROTTLE_BODY,
  problem,
  readJson,
} from './answers.js';
import { DASHBOARD_HTML } from './documents/dashboard.js';
import { openApiDocument } from './documents/openapi.js';
import {
  addThrottleKeyRoute,
  chainstateRoute,
  keyStateRoute,
  MAX_EMILY_BODY,
  newBlockRoute,
  setAccountLimitsRoute,
  setLimitsRoute,
} from './emily.js';
import type {
  HandleOptions,
  HandleResult,
  HttpRequest,
  HttpResponse,
  PathMatch,
  Route,
  RouteParams,
} from './messages.js';
import { operatorsByHash } from './operators.js';
import { limitsResponse, unchanged, windowResponse } from './reads.js';

const DASHBOARD_RESPONSE: HttpResponse = {
  status: 200,
  headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' },
  body: DASHBOARD_HTML,
};
let dashboardWithOperators: HttpResponse | undefined;

// The dashboard says whether the service has operators (data-operators on its body), so that
// the page asks an operator route only once an operator gave a token: a visitor's page load
// makes no request that fails.
function dashboardFor(options: HandleOptions): HttpResponse {
  if (operatorsByHash(options.operators, options.adminToken).size === 0) return DASHBOARD_RESPONSE;
  dashboardWithOperators ??= {
    ...DASHBOARD_RESPONSE,
    body: DASHBOARD_HTML.replace('<body>', '<body data-operators="true">'),
  };
  return dashboardWithOperators;
}

// A route on one account: the account decoded and checked first (400 invalid_account).
function onAccount(
  answer: (state: LimitsState, account: string, params: RouteParams) => HttpResponse,
): Route['handle'] {
  return (state, _request, params) => {
    const account = accountOf(params.account);
    return unchanged(
      state,
      account === undefined
        ? problem(400, 'invalid_account', INVALID_ACCOUNT)
        : answer(state, account, params),
    );
  };
}

const AMOUNT_TEXT = /^[0-9]{1,19}$/;

// GET /limits/{account}/withdrawals/{amount} and …/deposits/{amount}: the verdict as data.
function checkRoute(kind: 'withdrawals' | 'deposits'): Route['handle'] {
  return onAccount((state, account, params) => {
    const text = params.amount ?? '';
    const amount = AMOUNT_TEXT.test(text) ? BigInt(text) : undefined;
    if (amount === undefined || amount < 1n || amount > MAX_AMOUNT) {
      return problem(
        400,
        'invalid_amount',
        `the amount must be an integer from 1 to 2^63−1 in the smallest unit, got ${JSON.stringify(text.slice(0, 40))}`,
      );
    }
    const request = { account, amount };
    const v =
      kind === 'withdrawals' ? checkWithdrawal(state, request) : checkDeposit(state, request);
    return json(
      200,
      v.ok
        ? { ok: true, reason: null, limit: null, availableAt: null }
        : { ok: false, reason: v.reason, limit: v.limit, availableAt: v.availableAt },
    );
  });
}

function startThrottleRoute(state: LimitsState, request: HttpRequest): HandleResult {
  const body = readJson(request, MAX_THROTTLE_BODY);
  if (!body.ok) return unchanged(state, body.response);
  const r = startThrottle(state, body.value);
  if (!r.ok) {
    const status =
      r.error.code === 'invalid_credentials' ? 401 : r.error.code === 'key_revoked' ? 403 : 400;
    return unchanged(state, fromError(status, r.error));
  }
  // The key that pulled the brake (validated by startThrottle): while it is on already, a
  // second key's start changes nothing but the pending changes it cancels, and is its own.
  const name = (body.value as { name: string }).name;
  const events: LimitsEvent[] =
    r.state === state ? [] : [{ type: 'throttleStarted', initiator: name }];
  return {
    state: r.state,
    response: json(200, r.limits),
    events,
    actor: { kind: 'throttleKey', name },
  };
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

/** Every route of the service (the README's table, "The service"), in the order the OpenAPI document lists them. */
export const ROUTES: ReadonlyArray<Route> = [
  {
    method: 'GET',
    pattern: '/',
    access: 'public',
    maxBody: 0,
    handle: (state, _request, _params, options) => unchanged(state, dashboardFor(options)),
  },
  {
    method: 'GET',
    pattern: '/limits',
    access: 'public',
    maxBody: 0,
    cacheable: true,
    handle: (state) => unchanged(state, limitsResponse(state)),
  },
  {
    method: 'POST',
    pattern: '/limits',
    access: 'operator',
    maxBody: MAX_EMILY_BODY,
    handle: setLimitsRoute,
  },
  {
    method: 'GET',
    pattern: '/limits/{account}/withdrawals/{amount}',
    access: 'public',
    maxBody: 0,
    cacheable: true,
    handle: checkRoute('withdrawals'),
  },
  {
    method: 'GET',
    pattern: '/limits/{account}/deposits/{amount}',
    access: 'public',
    maxBody: 0,
    cacheable: true,
    handle: checkRoute('deposits'),
  },
  {
    method: 'GET',
    pattern: '/window',
    access: 'public',
    maxBody: 0,
    cacheable: true,
    handle: (state) => unchanged(state, windowResponse(state)),
  },
  {
    method: 'GET',
    pattern: '/window/{account}',
    access: 'public',
    maxBody: 0,
    cacheable: true,
    handle: onAccount((state, account) => {
      const view = windowOf(state, account);
      return view === undefined
        ? problem(
            404,
            'window_not_found',
            `${JSON.stringify(account)} has no window of its own: the global window applies`,
          )
        : json(200, view);
    }),
  },
  {
    method: 'GET',
    pattern: '/limits/{account}',
    access: 'public',
    maxBody: 0,
    cacheable: true,
    handle: onAccount((state, account) => {
      const limits = getAccountLimits(state, account);
      return limits === undefined
        ? problem(
            404,
            'account_not_found',
            `${JSON.stringify(account)} has no entry of its own: the global limits apply`,
          )
        : json(201, limits);
    }),
  },
  {
    method: 'POST',
    pattern: '/limits/{account}',
    access: 'operator',
    maxBody: MAX_EMILY_BODY,
    handle: setAccountLimitsRoute,
  },
  {
    method: 'POST',
    pattern: '/start_throttle',
    access: 'public',
    maxBody: MAX_THROTTLE_BODY,
    handle: startThrottleRoute,
  },
  {
    method: 'POST',
    pattern: '/throttle',
    access: 'operator',
    maxBody: MAX_THROTTLE_BODY,
    handle: addThrottleKeyRoute,
  },
  {
    method: 'PATCH',
    pattern: '/throttle/activate',
    access: 'operator',
    maxBody: MAX_THROTTLE_BODY,
    text: true,
    handle: keyStateRoute('activate'),
  },
  {
    method: 'PATCH',
    pattern: '/throttle/deactivate',
    access: 'operator',
    maxBody: MAX_THROTTLE_BODY,
    text: true,
    handle: keyStateRoute('deactivate'),
  },
  {
    method: 'POST',
    pattern: '/chainstate',
    access: 'operator',
    maxBody: MAX_THROTTLE_BODY,
    handle: chainstateRoute,
  },
  {
    method: 'PUT',
    pattern: '/chainstate',
    access: 'operator',
    maxBody: MAX_THROTTLE_BODY,
    handle: chainstateRoute,
  },
  {
    method: 'POST',
    pattern: '/new_block',
    access: 'operator',
    maxBody: MAX_BLOCK_BODY,
    feed: true,
    handle: newBlockRoute,
  },
  {
    method: 'POST',
    pattern: '/admin/events',
    access: 'operator',
    maxBody: MAX_EVENTS_BODY,
    handle: eventsRoute,
  },
  {
    method: 'GET',
    pattern: '/admin/changes',
    access: 'operator',
    maxBody: 0,
    handle: (state) => unchanged(state, json(200, changesListing(state))),
  },
  {
    method: 'POST',
    pattern: '/admin/changes/{id}/approve',
    access: 'operator',
    maxBody: 0,
    handle: approveRoute,
  },
  {
    method: 'DELETE',
    pattern: '/admin/changes/{id}',
    access: 'operator',
    maxBody: 0,
    handle: cancelRoute,
  },
  {
    method: 'GET',
    pattern: '/admin/audit',
    access: 'operator',
    maxBody: 0,
    server: 'log',
    handle: (state, request) => {
      const query = auditQuery(request.path);
      if (!query.ok) return unchanged(state, query.response);
      return {
        ...unchanged(
          state,
          problem(
            404,
            'not_found',
            'no audit trail here: this service keeps none (`peg-limits serve` keeps one)',
          ),
        ),
        audit: query,
      };
    },
  },
  {
    method: 'GET',
    pattern: '/admin/held',
    access: 'operator',
    maxBody: 0,
    server: 'log',
    feed: true,
    handle: heldRoute('list'),
  },
  {
    method: 'POST',
    pattern: '/admin/held/release',
    access: 'operator',
    maxBody: 0,
    server: 'log',
    feed: true,
    handle: heldRoute('release'),
  },
  {
    method: 'DELETE',
    pattern: '/admin/held',
    access: 'operator',
    maxBody: 0,
    server: 'log',
    feed: true,
    handle: heldRoute('drop'),
  },
  {
    method: 'GET',
    pattern: '/openapi.json',
    access: 'public',
    maxBody: 0,
    handle: (state) => unchanged(state, json(200, openApiDocument)),
  },
  {
    method: 'GET',
    pattern: '/events',
    access: 'public',
    maxBody: 0,
    server: 'stream',
    // The node:http server streams it; a service on its own has no stream.
    handle: (state) =>
      unchanged(
        state,
        problem(404, 'not_found', 'no stream here: `peg-limits serve` (startServer) serves it'),
      ),
  },
  {
    method: 'GET',
    pattern: '/healthz',
    access: 'ops',
    maxBody: 0,
    handle: (state) => unchanged(state, HEALTHY),
  },
  {
    method: 'GET',
    pattern: '/readyz',
    access: 'ops',
    maxBody: 0,
    handle: (state, _request, _params, options) => {
      const health = options.health?.() ?? { ready: true };
      if (health.ready && (health.heldBlocks ?? 0) > 0)
        return unchanged(
          state,
          json(200, {
            status: 'ready',
            heldBlocks: health.heldBlocks,
            detail: `the Stacks observer holds ${health.heldBlocks} block(s) past the chain bounds: the tip does not move until an operator releases or drops them (GET /admin/held)`,
          }),
        );
      return unchanged(
        state,
        health.ready
          ? READY
          : problem(503, health.code, health.reason, { headers: { 'retry-after': '1' } }),
      );
    },
  },
  {
    method: 'GET',
    pattern: '/metrics',
    access: 'ops',
    maxBody: 0,
    server: 'metrics',
    // The node:http server answers it (prom-client); a service on its own has none.
    handle: (state) =>
      unchanged(
        state,
        problem(
          404,
          'not_found',
          'no metrics here: `peg-limits serve` (startServer) serves them, with the prom-client package installed',
        ),
      ),
  },
];

const HEALTHY: HttpResponse = /* @__PURE__ */ json(200, { status: 'ok' });
const READY: HttpResponse = /* @__PURE__ */ json(200, { status: 'ready' });

interface Compiled {
  readonly pattern: string;
  // Each segment: a literal, or the name of a parameter (`param: true`).
  readonly segments: ReadonlyArray<{ readonly text: string; readonly param: boolean }>;
  readonly routes: ReadonlyArray<Route>;
  readonly allow: string;
  readonly methods: string;
  // The routes less the operator's, when some are an operator's (`all`: none are).
  readonly publicRoutes: ReadonlyArray<Route> | 'all';
  readonly publicAllow: string;
}

const allowOf = (routes: ReadonlyArray<Route>) =>
  routes.flatMap((r) => (r.method === 'GET' ? ['GET', 'HEAD'] : [r.method])).join(', ');

function compile(routes: ReadonlyArray<Route>): ReadonlyArray<Compiled> {
  const byPattern = new Map<string, Route[]>();
  for (const route of routes) {
    const same = byPattern.get(route.pattern);
    if (same === undefined) byPattern.set(route.pattern, [route]);
    else same.push(route);
  }
  return [...byPattern].map(([pattern, same]) => {
    const publicRoutes = same.filter((r) => r.access !== 'operator');
    return {
      pattern,
      segments: pattern.split('/').map((s) => {
        const param = /^\{(\w+)\}$/.exec(s);
        return param === null ? { text: s, param: false } : { text: param[1]!, param: true };
      }),
      routes: same,
      allow: allowOf(same),
      methods: publicRoutes.map((r) => r.method).join(', '),
      publicRoutes: publicRoutes.length === same.length ? 'all' : publicRoutes,
      publicAllow: allowOf(publicRoutes),
    };
  });
}

const COMPILED = /* @__PURE__ */ compile(ROUTES);

// A path's match, with the same match less the operator routes beside it (itself when it
// has none; undefined when all are).
function matchOf(c: Compiled, params: RouteParams): PathMatch {
  const { pattern, methods } = c;
  const match: { -readonly [K in keyof PathMatch]: PathMatch[K] } = {
    pattern,
    routes: c.routes,
    params,
    allow: c.allow,
    methods,
    public: undefined,
  };
  if (c.publicRoutes === 'all') match.public = match;
  else if (c.publicRoutes.length > 0)
    match.public = {
      pattern,
      routes: c.publicRoutes,
      params,
      allow: c.publicAllow,
      methods,
      public: undefined,
    };
  return match;
}

// The matches of the paths without parameters (`/limits`, `/window`…), made once: the
// most frequent requests then allocate nothing to be routed.
const STATIC_MATCHES: ReadonlyMap<string, PathMatch> = /* @__PURE__ */ new Map(
  COMPILED.filter((c) => c.segments.every((s) => !s.param)).map((c) => [
    c.pattern,
    Object.freeze(matchOf(c, Object.freeze({}))),
  ]),
);

/**
 * The pattern `path` matches (a query string is ignored), or `undefined`. A parameter
 * matches any one segment, an empty one too: a malformed account is its route's own
 * error (400), not a missing resource. `operator: false` leaves the operator routes out
 * (no operator token is configured: they do not exist).
 */
export function matchPath(path: string, operator: boolean): PathMatch | undefined {
  const match = STATIC_MATCHES.get(path) ?? matchParams(path);
  return match === undefined || operator ? match : match.public;
}

function matchParams(path: string): PathMatch | undefined {
  const q = path.indexOf('?');
  const bare = q < 0 ? path : path.slice(0, q);
  if (q >= 0) {
    const known = STATIC_MATCHES.get(bare);
    if (known !== undefined) return known;
  }
  const parts = bare.split('/');
  for (const c of COMPILED) {
    if (c.segments.length !== parts.length) continue;
    let ok = true;
    for (let i = 0; ok && i < parts.length; i++) {
      const s = c.segments[i]!;
      ok = s.param || s.text === parts[i];
    }
    if (!ok) continue;
    const params: Record<string, string> = {};
    for (let i = 0; i < parts.length; i++)
      if (c.segments[i]!.param) params[c.segments[i]!.text] = parts[i]!;
    return matchOf(c, params);
  }
  return undefined;
}

/** The route of a matched path for `method` (`HEAD` finds the `GET` route), or `undefined`. */
export function routeFor(match: PathMatch, method: string): Route | undefined {
  const m = method === 'HEAD' ? 'GET' : method;
  return match.routes.find((r) => r.method === m);
}
