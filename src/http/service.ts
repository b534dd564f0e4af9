/**
 * A running service over a state holder: serialises the requests that change the state,
 * lets the caller persist accepted events before anything is answered, and adapts the pure
 * handler to the Fetch API. Browser-safe.
 */

import type { ChainBounds } from '../core/bounds.js';
import { LimitsError } from '../core/errors.js';
import type { LooseningPolicy } from '../core/loosening.js';
import type { LimitsEvent, LimitsState } from '../core/state.js';
import {
  type BatchMeta,
  type EventLog,
  LogBusy,
  LogConflict,
  LogUnavailable,
} from './event-log.js';
import {
  type HttpRequest,
  type HttpResponse,
  handleRequest,
  problem,
  type Readiness,
} from './handler.js';
import type { HandleOptions, HandleResult } from './messages.js';
import { type Operator, presentedToken } from './operators.js';
import { givenRequestId, newRequestId, withRequestId } from './request-id.js';
import { matchPath, routeFor } from './route-match.js';
import { serialQueue } from './serial-queue.js';
import type { HeldBlocks, StacksFeed } from './stacks-feed.js';

/** Options of {@link createService} and {@link createFetchHandler}. */
export interface ServiceOptions {
  /** The state to start from (default: the log's state; one of the two is needed). */
  readonly state?: LimitsState | undefined;
  /**
   * The event log the service keeps its changes in: each accepted change is appended and
   * answered once durable, each change is computed on the log's newest state (another
   * writer's too), and what other writers append is shown as it comes. Without one (and
   * without `persist`), changes live in memory only.
   */
  readonly log?: EventLog | undefined;
  /** A token for the operator `admin`, who holds every scope (none when unset or empty). */
  readonly adminToken?: string | undefined;
  /**
   * The operators and their scopes, or a function that gives them as they are now (a
   * server reloads them without a restart, as the command does on SIGHUP): read for each
   * request. The operator routes answer 404 while there is no operator at all.
   */
  readonly operators?: ReadonlyArray<Operator> | (() => ReadonlyArray<Operator>) | undefined;
  /** How far one batch may move the tip (default 144 blocks ahead, 6 back). */
  readonly chainBounds?: ChainBounds | undefined;
  /** What a loosening batch waits for (default: nothing, it applies at once). */
  readonly loosening?: LooseningPolicy | undefined;
  /** Origins allowed to call the public endpoints (default any: `'*'`); `false` for none. */
  readonly cors?: '*' | ReadonlyArray<string> | false | undefined;
  /**
   * Seconds an HTTP cache may serve a public read without asking again (default 0: it asks
   * each time, and an unchanged answer is a 304); see `HandleOptions.cacheMaxAge`.
   */
  readonly cacheMaxAge?: number | undefined;
  /**
   * What `GET /readyz` says; by default, with a `log`, ready while it takes writes and is
   * not catching up, and without one always ready.
   */
  readonly health?: (() => Readiness) | undefined;
  /**
   * Without a `log`: called with the events a request was accepted with (and the state after
   * them, and the state they were computed on), before the response is sent and before the
   * new state is visible; when it throws (or rejects), the request fails with 500 and the
   * state stays as it was (a rejection that is a log's conflict, busy lock or unavailability is
   * understood as such when it is one of the errors the shipped logs throw).
   *
   * It may resolve once the events are written but not yet durable, with `{ durable }`: the
   * next change is then computed at once on the new state (so one flush can serve many
   * changes), while this one is answered, and its state shown to reads, only once
   * `durable` resolves (500 if it rejects).
   */
  readonly persist?:
    | ((
        events: ReadonlyArray<LimitsEvent>,
        next: LimitsState,
        base: LimitsState,
        meta: BatchMeta,
      ) => void | Promise<undefined | Persisted> | Promise<void>)
    | undefined;
  /**
   * The blocks a Stacks observer holds (`/admin/held`), alone.
   *
   * @deprecated Give `stacksFeed`, which holds them. Still taken when `stacksFeed` is not given.
   */
  readonly heldBlocks?: HeldBlocks | undefined;
  /**
   * A Stacks feed: the blocks it holds past the chain bounds (`/admin/held`: how many, and
   * what an operator asks of them), and the blocks posted to `POST /new_block` on the
   * service's own port (Emily's sidecar forwards them there), which it takes as the
   * observer's port takes a node's. Without it, both are 404.
   */
  readonly stacksFeed?: StacksFeed | undefined;
  /** Told of what a request refused that the operators should hear of (a jump past the chain bounds). */
  readonly onNotice?:
    | ((notice: { readonly type: string } & Readonly<Record<string, unknown>>) => void)
    | undefined;
  /**
   * Without a `log`, with a store other writers share: called before each change, so that
   * every answer to a change, a refusal too, is computed on the newest state.
   */
  readonly refresh?: Refresh | undefined;
}

/**
 * What {@link ServiceOptions.refresh} is: called before each change is computed, with the
 * state the service would compute it on; resolves with a newer durable state (another
 * writer's) to compute it on instead, or `undefined` when there is none.
 */
export type Refresh = (current: LimitsState) => Promise<LimitsState | undefined>;

/** What {@link ServiceOptions.persist} may resolve with: written, durable later. */
export interface Persisted {
  /** Resolves once the events are durable (rejects when they never will be). */
  readonly durable: Promise<void>;
}

/** How many times a change is computed again after conflicts before it is refused (503). */
const MAX_PERSIST_ATTEMPTS = 32;

/** A service: answers requests, one state change at a time. */
export interface Service {
  /** Answers a request; requests that may change the state are answered in arrival order. */
  handle(request: HttpRequest): Promise<HttpResponse>;
  /**
   * Answers a request that cannot change the state (any method but `POST`, `PUT`, `PATCH` and `DELETE`) at once, from
   * the state reads see; what {@link Service.handle} resolves with for it.
   */
  read(request: HttpRequest): HttpResponse;
  /** Calls `fn` with each new state reads see (once durable); returns a stop function. */
  watch(fn: (state: LimitsState) => void): () => void;
  /** The current state. */
  readonly state: LimitsState;
  /**
   * Replaces the state with a newer one that is durable already (rows another replica
   * wrote): taken in turn with the changes, shown once the changes before it are durable.
   * When `newer` is given, the state is taken only if `newer(current)` says it is newer
   * than the state the service has by then (a change may have gone past it meanwhile).
   */
  replace(state: LimitsState, newer?: (current: LimitsState) => boolean): Promise<void>;
}

/**
 * Creates a service over a state. Reads are answered at once from the last durable state;
 * requests that may change it (POST) are computed one after another, so the order in which
 * events are persisted is the order in which they are applied, and each is answered once
 * it, and every change before it, is durable.
 *
 * @example
 * ```ts
 * const service = createService({ state, adminToken: 'op', persist: (events) => journal.append(events) });
 * const response = await service.handle({ method: 'GET', path: '/limits' });
 * ```
 */
export function createService(options: ServiceOptions): Service {
  const log = options.log;
  const initial = options.state ?? log?.state;
  if (initial === undefined)
    throw new LimitsError('invalid_option', 'createService needs a state or a log');
  const persist = log !== undefined ? log.append.bind(log) : options.persist;
  const refresh = log !== undefined ? log.catchUp.bind(log) : options.refresh;
  // `visible`: what reads see, only ever durable. `written`: what the next change is
  // computed on; ahead of `visible` while a flush is under way.
  let visible = initial;
  let written = initial;
  const queue = serialQueue();
  // Resolves once every change accepted so far is durable (and shown); rejects once a flush
  // has failed, until the log hands over a durable state to go on from (`adopt`).
  let allDurable: Promise<void> = Promise.resolve();
  const handleOptions = { ...handleOptionsOf(options), health: healthOf(options, log) };

  // Runs in arrival order, one at a time; returns the answer and what it must wait for.
  async function change(
    request: HttpRequest,
    requestId: string,
  ): Promise<{ response: HttpResponse; wait: Promise<void> | undefined }> {
    try {
      // A log with a write lock takes it here and catches up under it: the change is then
      // computed on the newest state, and no other writer can append before it.
      const newer = await refresh?.(written);
      if (newer !== undefined) adopt(newer);
    } catch (e) {
      if (e instanceof LogBusy) return { response: busy(e), wait: undefined };
      // Nothing newer could be read: the append below says whether the log takes writes.
    }
    for (let attempt = 1; ; attempt++) {
      const result = handleRequest(written, request, handleOptions);
      if (result.notice !== undefined) tell(options, result.notice);
      // A refusal or a no-op computed on a state not yet durable waits for that state.
      if (result.events.length === 0) return { response: result.response, wait: allDurable };
      let persisted: Persisted | undefined;
      try {
        const meta: BatchMeta = metaOf(result.actor, requestId, request);
        persisted = (await persist?.(result.events, result.state, written, meta)) ?? undefined;
      } catch (e) {
        if (e instanceof LogConflict) {
          // Another writer was first: its rows are durable; compute the request again on them.
          adopt(e.state);
          if (attempt < MAX_PERSIST_ATTEMPTS) {
            // Writers that keep colliding take turns: a short, growing, random pause.
            await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 2 ** attempt)));
            continue;
          }
          return { response: writeConflict(attempt), wait: undefined };
        }
        if (e instanceof LogBusy) return { response: busy(e), wait: undefined };
        return { response: failed(e), wait: undefined };
      }
      written = result.state;
      const durable = persisted?.durable;
      allDurable = Promise.all([allDurable, durable]).then(() => {
        show(result.state);
      });
      return { response: result.response, wait: allDurable };
    }
  }

  // What reads see changes: tell the watchers (`GET /events`).
  const watchers = new Set<(state: LimitsState) => void>();
  function show(state: LimitsState): void {
    if (state === visible) return;
    visible = state;
    for (const fn of watchers) {
      try {
        fn(state);
      } catch {
        // A watcher's failure is its own.
      }
    }
  }

  // `state` is durable (another writer's rows, or what the log holds after a write of this
  // service failed): what comes next is computed on it, and it is shown once the changes
  // before it are settled. A change that failed does not hold back the ones after it.
  function adopt(state: LimitsState): void {
    written = state;
    allDurable = allDurable
      .catch(() => undefined)
      .then(() => {
        show(state);
      });
  }

  function replace(state: LimitsState, newer?: (current: LimitsState) => boolean): Promise<void> {
    return queue
      .run(() => {
        if (newer === undefined || newer(written)) adopt(state);
      })
      .then(() => allDurable);
  }

  // What other writers append is shown once the changes before it are durable (a failure
  // there is the writes' to report), unless a change of this service went past it already.
  log?.follow((state, position) => {
    replace(state, (current) => (log.positionOf(current) ?? -1) < position).catch(() => undefined);
  });

  return {
    get state() {
      return visible;
    },
    replace,
    watch(fn) {
      watchers.add(fn);
      return () => watchers.delete(fn);
    },
    read: (request) => handleRequest(visible, request, handleOptions).response,
    async handle(request) {
      // The held blocks, and a block posted here, are the Stacks feed's: answered outside the
      // queue of changes, since the feed sends its own batches through it.
      const match = request.match ?? matchPath(request.path, true);
      if (match !== undefined && routeFor(match, request.method.toUpperCase())?.feed === true)
        return feedAnswer(visible, request, handleOptions, options);
      if (!isChange(request.method)) {
        const result = handleRequest(visible, request, handleOptions);
        const audit = log?.audit;
        if (result.audit === undefined || audit === undefined) return result.response;
        // The audit trail, as its lines are: each record's exact text.
        const lines = await audit(result.audit.after, result.audit.limit);
        return {
          status: 200,
          headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
          body: `[${lines.join(',')}]`,
        };
      }
      // A change is recorded under its request id: the one given, or one made up; the
      // answer carries it back either way.
      const given = givenRequestId(request);
      if (!given.ok) return given.response;
      const id = given.id ?? newRequestId();
      // The next change waits for this one to be written, not for it to be flushed.
      const { response, wait } = await queue.run(() => change(request, id));
      try {
        await wait;
      } catch (e) {
        return withRequestId(failed(e), id);
      }
      return withRequestId(response, id);
    },
  };
}

// Tells the listener what a request refused that the operators should hear of.
function tell(options: ServiceOptions, notice: NonNullable<HandleResult['notice']>): void {
  try {
    options.onNotice?.(notice);
  } catch {
    // The listener's failure is its own.
  }
}

function metaOf(actor: HandleResult['actor'], requestId: string, request: HttpRequest): BatchMeta {
  return { actor: actor ?? { kind: 'system' }, requestId, remote: request.remote ?? null };
}

// Other writers were first every time.
function writeConflict(attempts: number): HttpResponse {
  return problem(
    503,
    'write_conflict',
    `other writers were first ${attempts} times in a row; try again`,
    { headers: { 'retry-after': '1' } },
  );
}

// What GET /readyz reads: the log's readiness (or the one given), with the held blocks.
function healthOf(options: ServiceOptions, log: EventLog | undefined) {
  const health = options.health ?? (log === undefined ? undefined : () => readinessOf(log));
  const held = options.stacksFeed ?? options.heldBlocks;
  if (held === undefined || health === undefined) return health;
  return (): Readiness => {
    const r = health();
    const n = held.count();
    return r.ready && n > 0 ? { ...r, heldBlocks: n } : r;
  };
}

// `/admin/held` and `POST /new_block`, admitted by their routes, answered by the Stacks
// feed's hooks outside the queue of changes, writing as the operator the request's token names.
function feedAnswer(
  state: LimitsState,
  request: HttpRequest,
  handleOptions: HandleOptions,
  options: ServiceOptions,
): Promise<HttpResponse> | HttpResponse {
  const result = handleRequest(state, request, handleOptions);
  const given = presentedToken(request);
  const authorization = given.ok ? `Bearer ${given.token}` : '';
  const held = options.stacksFeed ?? options.heldBlocks;
  if (result.held !== undefined && held !== undefined)
    return held.handle(result.held.op, result.held.by, authorization);
  if (result.block !== undefined && options.stacksFeed !== undefined)
    return options.stacksFeed.newBlock(result.block.payload, authorization, request.remote);
  return result.response;
}

/** Whether a request of `method` may change the state (POST, PUT, PATCH, DELETE): it waits its turn. */
export function isChange(method: string): boolean {
  const m = method.toUpperCase();
  return m === 'POST' || m === 'DELETE' || m === 'PUT' || m === 'PATCH';
}

/** What the handler needs of a service's options, with the operators read as they are now. */
export function handleOptionsOf(options: ServiceOptions) {
  const operators = options.operators;
  return {
    adminToken: options.adminToken,
    cors: options.cors,
    cacheMaxAge: options.cacheMaxAge,
    chainBounds: options.chainBounds,
    loosening: options.loosening,
    get operators() {
      return typeof operators === 'function' ? operators() : operators;
    },
  };
}

/** What `GET /readyz` says of a log: ready while it takes writes and is not catching up. */
export function readinessOf(log: EventLog): Readiness {
  if (!log.writable)
    return {
      ready: false,
      code: 'store_unavailable',
      reason: `the event log takes no writes: ${log.unavailable ?? 'unavailable'}`,
    };
  if (log.catchingUp)
    return {
      ready: false,
      code: 'catching_up',
      reason: 'reading what other replicas wrote while this one was away from the database',
    };
  return { ready: true };
}

// A change that could not be kept: 503 while the log cannot take writes, 500 otherwise.
function failed(e: unknown): HttpResponse {
  if (e instanceof LogUnavailable)
    return problem(503, 'store_unavailable', e.message, { headers: { 'retry-after': '1' } });
  const message = e instanceof Error ? e.message : String(e);
  return problem(500, 'internal_error', `the change could not be persisted: ${message}`);
}

// Other writers held the log's write lock too long: try again.
function busy(e: LogBusy): HttpResponse {
  return problem(503, 'write_conflict', e.message, { headers: { 'retry-after': '1' } });
}
