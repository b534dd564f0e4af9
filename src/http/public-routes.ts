/**
 * The answers of the public and ops routes that are not reads of the limits: the dashboard
 * (saying whether the service has operators), `POST /start_throttle`, `GET /healthz`,
 * `GET /readyz`, and what a service on its own answers for the routes only `peg-limits
 * serve` can serve (`/events`, `/metrics`). Pure.
 */
import { startThrottle } from '../core/start-throttle.js';
import type { LimitsEvent, LimitsState } from '../core/state.js';
import { fromError, json, MAX_THROTTLE_BODY, problem, readJson } from './answers.js';
import { DASHBOARD_HTML } from './documents/dashboard.js';
import type { HandleOptions, HandleResult, HttpRequest, HttpResponse, Route } from './messages.js';
import { operatorsByHash } from './operators.js';
import { unchanged } from './reads.js';

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

/** `GET /`: the dashboard. */
export const dashboardRoute: Route['handle'] = (state, _request, _params, options) =>
  unchanged(state, dashboardFor(options));

/** `POST /start_throttle`: a key's holder pulls the brake. */
export function startThrottleRoute(state: LimitsState, request: HttpRequest): HandleResult {
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

const HEALTHY: HttpResponse = /* @__PURE__ */ json(200, { status: 'ok' });
const READY: HttpResponse = /* @__PURE__ */ json(200, { status: 'ready' });

/** `GET /healthz`: the process serves. */
export const healthRoute: Route['handle'] = (state) => unchanged(state, HEALTHY);

/** `GET /readyz`: whether the service can take changes now (and what its adapter notes, if anything). */
export const readyRoute: Route['handle'] = (state, _request, _params, options) => {
  const health = options.health?.() ?? { ready: true };
  if (health.ready && health.notes !== undefined)
    return unchanged(state, json(200, { status: 'ready', ...health.notes }));
  return unchanged(
    state,
    health.ready
      ? READY
      : problem(503, health.code, health.reason, { headers: { 'retry-after': '1' } }),
  );
};

/**
 * A route the node:http server answers itself (the stream of changes, the metrics): a
 * service on its own says so.
 */
export function serverOnly(what: string): Route['handle'] {
  return (state) => unchanged(state, problem(404, 'not_found', what));
}
