/**
 * A running service over a state holder: one queue of changes, in which every request that
 * may change the state and every operator's batch (`applyBatch`, the one port a feed and the
 * HTTP routes share) is computed on the newest state, persisted before it is answered, and
 * shown to reads once durable. Browser-safe.
 */

import type { ChainBounds } from '../core/bounds.js';
import { LimitsError, located } from '../core/errors.js';
import type { LooseningPolicy } from '../core/loosening.js';
import { type BatchOutcome, decideBatch, type OperatorBatch } from '../core/operator-batch.js';
import type { LimitsEvent, LimitsState } from '../core/state.js';
import { ChangeQueue, type Persisted, type Refresh, type Turn } from './change-queue.js';
import {
  type BatchMeta,
  type EventLog,
  LogBusy,
  LogUnavailable,
  operatorActor,
} from './event-log.js';
import {
  batchResult,
  type HttpRequest,
  type HttpResponse,
  handleRequest,
  problem,
  type Readiness,
  servesItself,
  takeRequest,
} from './handler.js';
import type { Notice, Route } from './messages.js';
import type { Operator } from './operators.js';
import { givenRequestId, isRequestId, newRequestId, withRequestId } from './request-id.js';

export type { Persisted, Refresh } from './change-queue.js';

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
   * The routes of an adapter that serves more than the service: the service's ({@link
   * ROUTES}) and its own, which it answers itself (`Route.serve`: a log's audit trail, a
   * feed's blocks). Default the service's.
   * @internal
   */
  readonly routes?: ReadonlyArray<Route> | undefined;
  /** Told of what a request refused that the operators should hear of (a jump past the chain bounds). */
  readonly onNotice?: ((notice: Notice) => void) | undefined;
  /**
   * Without a `log`, with a store other writers share: called before each change, so that
   * every answer to a change, a refusal too, is computed on the newest state.
   */
  readonly refresh?: Refresh | undefined;
}

/**
 * An operator's batch as {@link Service.applyBatch} takes it: the events, who sends them,
 * whether they pass the chain bounds, and where they come from (for the audit trail).
 */
export interface ServiceBatch extends OperatorBatch {
  /**
   * The trail's name for the request (1 to 128 letters, digits and `. _ : @ / + = -`); one
   * is made up when absent.
   */
  readonly requestId?: string | undefined;
  /** The sender's address, when there is one. */
  readonly remote?: string | undefined;
}

/** A service: answers requests, one state change at a time. */
export interface Service {
  /** Answers a request; requests that may change the state are answered in arrival order. */
  handle(request: HttpRequest): Promise<HttpResponse>;
  /**
   * Answers a request that cannot change the state (any method but `POST`, `PUT`, `PATCH` and `DELETE`) at once, from
   * the state reads see; what {@link Service.handle} resolves with for it.
   */
  read(request: HttpRequest): HttpResponse;
  /**
   * The one port of every operator's batch: decided (`decideBatch`: scopes, chain bounds, a
   * loosening that waits) on the newest state in the queue of changes, with the requests;
   * persisted with its record and shown before it resolves. Resolves with the outcome as
   * data: applied, waiting as a change, or refused with the event's index and code. Rejects
   * only when the outcome could not be kept: the log's `LogUnavailable`, `LogBusy` (other
   * writers held it), or the persisting error; a malformed `requestId` is a `LimitsError`.
   */
  applyBatch(batch: ServiceBatch): Promise<BatchOutcome>;
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
  const changes = new ChangeQueue(
    initial,
    log !== undefined ? log.append.bind(log) : options.persist,
    log !== undefined ? log.catchUp.bind(log) : options.refresh,
  );
  const handleOptions = { ...handleOptionsOf(options), health: healthOf(options, log) };

  // An operator's batch decided on `state`: the outcome, and the operators told of a jump
  // past the chain bounds (an emergency, not traffic).
  function decided(state: LimitsState, batch: OperatorBatch): BatchOutcome {
    const outcome = decideBatch(state, batch, handleOptions);
    if (outcome.outcome === 'refused' && outcome.by === 'chain-bounds')
      tell(options, {
        type: 'chainBoundRefused',
        actor: operatorActor(batch.operator.name),
        path: outcome.error.path,
        detail: located(outcome.error),
      });
    return outcome;
  }

  // A request's turn: a batch route's batch decided at the port, or the handler's answer.
  function requestTurn(state: LimitsState, request: HttpRequest): Turn<HttpResponse> {
    const taken = takeRequest(state, request, handleOptions);
    const result =
      taken.kind === 'batch'
        ? batchResult(state, taken.read, decided(state, taken.read.batch))
        : taken.kind === 'answered'
          ? taken.result
          : handleRequest(state, request, handleOptions);
    return {
      state: result.state,
      events: result.events,
      actor: result.actor,
      value: result.response,
    };
  }

  // The port's turn: the outcome itself.
  function batchTurn(state: LimitsState, batch: OperatorBatch): Turn<BatchOutcome> {
    const outcome = decided(state, batch);
    return outcome.outcome === 'refused'
      ? { state, events: [], actor: undefined, value: outcome }
      : {
          state: outcome.state,
          events: outcome.events,
          actor: operatorActor(batch.operator.name),
          value: outcome,
        };
  }

  // A route the adapter serves itself, outside the queue of changes (it sends its own
  // batches through the port), on the state reads see.
  async function served(request: HttpRequest): Promise<HttpResponse> {
    const state = changes.visible;
    const taken = takeRequest(state, request, handleOptions);
    if (taken.kind !== 'served') return handleRequest(state, request, handleOptions).response;
    try {
      return taken.answer(await taken.route.serve!(request, taken.operator));
    } catch (e) {
      return changeFailed(e);
    }
  }

  // What other writers append is shown once the changes before it are durable (a failure
  // there is the writes' to report), unless a change of this service went past it already.
  log?.follow((state, position) => {
    changes
      .replace(state, (current) => (log.positionOf(current) ?? -1) < position)
      .catch(() => undefined);
  });

  return {
    get state() {
      return changes.visible;
    },
    replace: (state, newer) => changes.replace(state, newer),
    watch: (fn) => changes.watch(fn),
    read: (request) => handleRequest(changes.visible, request, handleOptions).response,
    async handle(request) {
      if (servesItself(request, handleOptions)) return served(request);
      if (!isChange(request.method))
        return handleRequest(changes.visible, request, handleOptions).response;
      // A change is recorded under its request id: the one given, or one made up; the
      // answer carries it back either way.
      const given = givenRequestId(request);
      if (!given.ok) return given.response;
      const id = given.id ?? newRequestId();
      let turn: { value: HttpResponse; wait: Promise<void> };
      try {
        // The next change waits for this one to be written, not for it to be flushed.
        turn = await changes.run(
          (state) => requestTurn(state, request),
          id,
          request.remote ?? null,
        );
      } catch (e) {
        return withRequestId(changeFailed(e), id);
      }
      try {
        await turn.wait;
      } catch (e) {
        return withRequestId(changeFailed(e), id);
      }
      return withRequestId(turn.value, id);
    },
    async applyBatch(batch) {
      const id = batch.requestId ?? newRequestId();
      if (!isRequestId(id))
        throw new LimitsError(
          'invalid_request',
          `a batch's requestId takes 1 to 128 letters, digits and . _ : @ / + = -, got ${JSON.stringify(id.slice(0, 40))}`,
          'requestId',
        );
      const { value, wait } = await changes.run(
        (state) => batchTurn(state, batch),
        id,
        batch.remote ?? null,
      );
      await wait;
      return value;
    },
  };
}

// Tells the listener what a request refused that the operators should hear of.
function tell(options: ServiceOptions, notice: Notice): void {
  try {
    options.onNotice?.(notice);
  } catch {
    // The listener's failure is its own.
  }
}

// What GET /readyz reads: the log's readiness, or the one given.
function healthOf(options: ServiceOptions, log: EventLog | undefined) {
  return options.health ?? (log === undefined ? undefined : () => readinessOf(log));
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
    routes: options.routes,
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

/**
 * The answer of a change that could not be kept: 503 `store_unavailable` while the log cannot
 * take writes, 503 `write_conflict` when other writers held it, 500 otherwise.
 */
function changeFailed(e: unknown): HttpResponse {
  if (e instanceof LogBusy) return busy(e);
  if (e instanceof LogUnavailable)
    return problem(503, 'store_unavailable', e.message, { headers: { 'retry-after': '1' } });
  const message = e instanceof Error ? e.message : String(e);
  return problem(500, 'internal_error', `the change could not be persisted: ${message}`);
}

// Other writers held the log's write lock too long: try again.
function busy(e: LogBusy): HttpResponse {
  return problem(503, 'write_conflict', e.message, { headers: { 'retry-after': '1' } });
}
