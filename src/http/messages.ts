/**
 * The HTTP contract of the service, as types only: the request and response every route and
 * adapter speaks, what the handler returns, its options, readiness, and a route of the
 * table with the path matched against it. The route table (`routes.ts`), the answers
 * (`answers.ts`) and the handler (`handler.ts`) build on these. Pure.
 */

import type { ChainBounds } from '../core/bounds.js';
import type { LooseningPolicy } from '../core/loosening.js';
import type { BatchRefused } from '../core/operator-batch.js';
import type { Scope } from '../core/scopes.js';
import type { LimitsEvent, LimitsState } from '../core/state.js';
import type { AuditActor } from './event-log.js';

/** An operator: its name, the hash of its token (`hashOperatorToken`) and what it may do. */
export interface Operator {
  readonly name: string;
  /** `sha256:` and the lowercase hex SHA-256 of the token. */
  readonly tokenHash: string;
  /** A non-empty subset of `chain`, `limits`, `keys`. */
  readonly scopes: ReadonlyArray<Scope>;
}

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
  /**
   * The path already matched against the route table (by `admitRequest`, whose `match`
   * an adapter passes on), so that it is matched once per request. When absent, the
   * handler matches `path` itself.
   * @internal
   */
  readonly match?: PathMatch | undefined;
  /** The client's address (the audit trail records it), when the adapter knows it. */
  readonly remote?: string | undefined;
}

/** A response: status, headers (lower-case names) and body text. */
export interface HttpResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/**
 * What the operators are told that is no change (nothing is recorded): a jump past the chain
 * bounds refused, a block held, a rejection the node does not show. Its `type` names it.
 */
export type Notice = { readonly type: string } & Readonly<Record<string, unknown>>;

/** What {@link handleRequest} returns: the next state, the response, and the events it accepted (to journal). */
export interface HandleResult {
  readonly state: LimitsState;
  readonly response: HttpResponse;
  readonly events: ReadonlyArray<LimitsEvent>;
  /** Who the events are from (the operator, or the throttle key), for the audit trail. */
  readonly actor?: AuditActor | undefined;
  /**
   * Never set: the audit trail's route is the server's own.
   *
   * @deprecated Read the trail through the log (`EventLog.audit`); `peg-limits serve`
   * answers `GET /admin/audit` itself. Kept for 1.x, gone in 2.0.
   */
  readonly audit?: { readonly after: number; readonly limit: number } | undefined;
  /**
   * Never set: what the operators are told of a refused batch goes to `ServiceOptions.onNotice`.
   *
   * @deprecated Give `onNotice` to the service. Kept for 1.x, gone in 2.0.
   */
  readonly notice?: Notice | undefined;
}

/** Options of {@link handleRequest}. */
export interface HandleOptions {
  /**
   * A token for the operator `admin`, who holds every scope (unset or empty: no such
   * operator). With neither it nor `operators`, the operator routes answer 404.
   */
  readonly adminToken?: string | undefined;
  /**
   * The operators, by the hash of their tokens, and their scopes (`operatorsFromJson`
   * checks a list): an event outside the caller's scopes is 403 `scope_denied`.
   */
  readonly operators?: ReadonlyArray<Operator> | undefined;
  /**
   * How far one batch may move the tip (default 144 blocks ahead, 6 back): past them, 409
   * `chain_bound_exceeded`, for every operator, unless an operator holding both `chain` and
   * `limits` sends `Peg-Limits-Override: chain-bounds`.
   */
  readonly chainBounds?: ChainBounds | undefined;
  /**
   * What a batch that loosens the limits waits for (default: nothing, it applies at once).
   * When it waits, such a batch becomes a pending change, answered 202.
   */
  readonly loosening?: LooseningPolicy | undefined;
  /**
   * Which origins a web page may call the public endpoints from: `'*'` (the default) for
   * any, a list of origins (`https://bridge.example`), or `false` for no CORS headers at
   * all. `POST /admin/events` never gets CORS headers, whatever this says.
   */
  readonly cors?: '*' | ReadonlyArray<string> | false | undefined;
  /**
   * Whether the service can take changes now, for `GET /readyz`; without it the
   * service is always ready (its state is in memory).
   */
  readonly health?: (() => Readiness) | undefined;
  /**
   * How long, in seconds, an HTTP cache may serve a public read without asking again
   * (`Cache-Control: public, max-age=N, stale-while-revalidate=N`); 0, the default, is
   * `no-cache`: a cache asks each time, and an unchanged answer is a 304 without a body.
   */
  readonly cacheMaxAge?: number | undefined;
  /**
   * The routes an adapter serves: the service's and its own (`ServiceOptions.routes`);
   * default the service's.
   * @internal
   */
  readonly routes?: ReadonlyArray<Route> | undefined;
}

/** What `GET /readyz` answers from: ready, or why not. */
export type Readiness =
  | {
      readonly ready: true;
      /**
       * What the answer adds to `{ status: 'ready' }`: what a server's feeds would have an
       * operator know (blocks held, say), when there is any.
       */
      readonly notes?: Readonly<Record<string, unknown>> | undefined;
    }
  | {
      readonly ready: false;
      /** `store_unavailable` (the log takes no writes) or `catching_up` (a replica behind). */
      readonly code: 'store_unavailable' | 'catching_up';
      readonly reason: string;
    };

/** The parameters a path pattern captured (`{account}` → `params.account`), still encoded. */
export type RouteParams = Readonly<Record<string, string>>;

/** One resource and method of the service. */
export interface Route {
  /** The method it answers; a `GET` route answers `HEAD` too (the same answer, no body). */
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /**
   * The path: literal segments and `{name}` parameters (one whole segment each). It is the
   * OpenAPI document's path and the metrics' route label: never a raw path.
   */
  readonly pattern: string;
  /**
   * `public`: anyone may call it, and a page on another origin too (CORS, as configured).
   * `operator`: the bearer token is checked before the body is read; never CORS; the route
   * does not exist (404) when no operator is configured. `ops`: for the operators'
   * tools (health, metrics): anyone may call it, never CORS.
   */
  readonly access: 'public' | 'operator' | 'ops';
  /** The largest body it takes, in bytes; 0 when it reads none (any body is ignored). */
  readonly maxBody: number;
  /** Its body may also be `text/plain` (a bare string), not only `application/json`. */
  readonly text?: true | undefined;
  /**
   * A public read an HTTP cache may hold: its answers carry an `ETag` (a 2xx's),
   * `Cache-Control` as the service's cache policy says and `Vary`; a matching
   * `If-None-Match` is answered 304 without a body.
   */
  readonly cacheable?: true | undefined;
  /**
   * How the route is answered; exactly one of `handle`, `batch` and `serve`. `handle`: on
   * `state`, at once (a read returns `state` itself and no events); an operator route gets
   * the operator its token named.
   */
  readonly handle?:
    | ((
        state: LimitsState,
        request: HttpRequest,
        params: RouteParams,
        options: HandleOptions,
        operator: Operator | undefined,
      ) => HandleResult)
    | undefined;
  /** An operator's batch: read from the request, then decided at the service's one port. */
  readonly batch?: BatchRoute | undefined;
  /**
   * An adapter's own resource (a log's audit trail, a feed's blocks), answered with time and
   * outside the queue of changes, given the operator its token named. Only an adapter's
   * table has such routes (`ServiceOptions.routes`).
   */
  readonly serve?:
    | ((request: HttpRequest, operator: Operator | undefined) => Promise<HttpResponse>)
    | undefined;
}

/**
 * A route that writes an operator's batch (`POST /admin/events`, Emily's writes): how the
 * request becomes the batch's events, and how an outcome is answered where it differs from
 * the usual answers (200 with the Limits, 202 with the pending change, the problem).
 */
export interface BatchRoute {
  /** The events the request asks for, and its answer once they applied; or the answer refusing it. */
  read(state: LimitsState, request: HttpRequest, params: RouteParams): BatchRead;
}

/** A request read by a {@link BatchRoute}. */
type BatchRead =
  | {
      readonly ok: true;
      readonly events: ReadonlyArray<LimitsEvent>;
      /** The answer once they applied (default: 200 with the Limits after them). */
      readonly applied?: ((after: LimitsState) => HttpResponse) | undefined;
      /** The answer of a refusal, where the route has its own (`undefined`: the problem). */
      readonly refused?: ((outcome: BatchRefused) => HttpResponse | undefined) | undefined;
    }
  | { readonly ok: false; readonly response: HttpResponse };

/** A path matched against the table: the routes at its pattern (one per method) and its parameters. */
export interface PathMatch {
  readonly pattern: string;
  readonly routes: ReadonlyArray<Route>;
  readonly params: RouteParams;
  /** The methods the path answers, as an `Allow` header says them (`GET, HEAD`; `POST`). */
  readonly allow: string;
  /** The methods its public routes have (what a CORS preflight allows, with `OPTIONS`). */
  readonly methods: string;
  /**
   * The same path without its operator routes, for a service that has no operator (they
   * do not exist then); `undefined` when every route of the path is an operator's.
   */
  readonly public: PathMatch | undefined;
}
