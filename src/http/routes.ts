/**
 * The route table: every resource of the service once, with its method, path pattern,
 * access (public, operator or ops), body cap and answer. Admission, the handler, the adapters,
 * the OpenAPI document's test and the metrics' route labels all read it; a request's path
 * is matched against it once (`route-match.ts`). The answers are the routes' own modules:
 * the reads (`reads.ts`), the public and ops routes (`public-routes.ts`), the operator's
 * (`admin.ts`) and Emily's writes (`emily.ts`). Pure.
 */

import { approveRoute, cancelRoute, changesListing, EVENTS_BATCH } from './admin.js';
import { json, MAX_EVENTS_BODY, MAX_THROTTLE_BODY } from './answers.js';
import { openApiDocument } from './documents/openapi.js';
import {
  ADD_THROTTLE_KEY,
  CHAINSTATE,
  keyStateBatch,
  MAX_EMILY_BODY,
  SET_ACCOUNT_LIMITS,
  SET_LIMITS,
} from './emily.js';
import type { Route } from './messages.js';
import {
  dashboardRoute,
  healthRoute,
  readyRoute,
  serverOnly,
  startThrottleRoute,
} from './public-routes.js';
import {
  accountLimitsRoute,
  accountMintWindowRoute,
  accountWindowRoute,
  checkRoute,
  integrityResponse,
  limitsResponse,
  mintWindowResponse,
  unchanged,
  windowResponse,
} from './reads.js';

/** Every route of the service (the README's table, "The service"), in the order the OpenAPI document lists them. */
export const ROUTES: ReadonlyArray<Route> = [
  {
    method: 'GET',
    pattern: '/',
    access: 'public',
    maxBody: 0,
    handle: dashboardRoute,
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
    batch: SET_LIMITS,
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
    handle: accountWindowRoute,
  },
  {
    method: 'GET',
    pattern: '/mint-window',
    access: 'public',
    maxBody: 0,
    cacheable: true,
    handle: (state) => unchanged(state, mintWindowResponse(state)),
  },
  {
    method: 'GET',
    pattern: '/mint-window/{account}',
    access: 'public',
    maxBody: 0,
    cacheable: true,
    handle: accountMintWindowRoute,
  },
  {
    method: 'GET',
    pattern: '/integrity',
    access: 'public',
    maxBody: 0,
    cacheable: true,
    handle: (state) => unchanged(state, integrityResponse(state)),
  },
  {
    method: 'GET',
    pattern: '/limits/{account}',
    access: 'public',
    maxBody: 0,
    cacheable: true,
    handle: accountLimitsRoute,
  },
  {
    method: 'POST',
    pattern: '/limits/{account}',
    access: 'operator',
    maxBody: MAX_EMILY_BODY,
    batch: SET_ACCOUNT_LIMITS,
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
    batch: ADD_THROTTLE_KEY,
  },
  {
    method: 'PATCH',
    pattern: '/throttle/activate',
    access: 'operator',
    maxBody: MAX_THROTTLE_BODY,
    text: true,
    batch: keyStateBatch('activate'),
  },
  {
    method: 'PATCH',
    pattern: '/throttle/deactivate',
    access: 'operator',
    maxBody: MAX_THROTTLE_BODY,
    text: true,
    batch: keyStateBatch('deactivate'),
  },
  {
    method: 'POST',
    pattern: '/chainstate',
    access: 'operator',
    maxBody: MAX_THROTTLE_BODY,
    batch: CHAINSTATE,
  },
  {
    method: 'PUT',
    pattern: '/chainstate',
    access: 'operator',
    maxBody: MAX_THROTTLE_BODY,
    batch: CHAINSTATE,
  },
  {
    method: 'POST',
    pattern: '/admin/events',
    access: 'operator',
    maxBody: MAX_EVENTS_BODY,
    batch: EVENTS_BATCH,
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
    // The node:http server answers it with a route of its own (a stream); a service on its
    // own has no stream.
    handle: serverOnly('no stream here: `peg-limits serve` (startServer) serves it'),
  },
  {
    method: 'GET',
    pattern: '/healthz',
    access: 'ops',
    maxBody: 0,
    handle: healthRoute,
  },
  {
    method: 'GET',
    pattern: '/readyz',
    access: 'ops',
    maxBody: 0,
    handle: readyRoute,
  },
  {
    method: 'GET',
    pattern: '/metrics',
    access: 'ops',
    maxBody: 0,
    // The node:http server answers it with a route of its own (prom-client); a service on
    // its own has none.
    handle: serverOnly(
      'no metrics here: `peg-limits serve` (startServer) serves them, with the prom-client package installed',
    ),
  },
];
