/**
 * `peg-limits serve` as a function: the service on node:http over an event log (the data
 * folder or PostgreSQL, which the caller opens), with limits that keep slow and hostile
 * clients from holding it. Node-only.
 */
import {
  createService,
  type EventLog,
  LimitsError,
  type Notice,
  type Operator,
  type Service,
  type ServiceOptions,
} from 'peg-limits';
import { CAP_FIELDS, handleOptionsOf } from '../../internal.js';
import type { ReservesReader } from '../bitcoin/index.js';
import type { RequestLine } from '../ops/index.js';
import { createMetrics, MetricsUnavailable, type ServerMetrics } from '../ops/index.js';
import {
  type AlertOptions,
  type Alerts,
  createAlerts,
  memoryCursors,
  recordChanges,
} from '../record/index.js';
import type { StacksObserver, StacksObserverOptions } from '../stacks/index.js';
import { createAnswers } from './answer-writer.js';
import { auditRoute } from './audit-route.js';
import { DEFAULT_SERVER_LIMITS, limitsInForce, type ServerLimits } from './client-limits.js';
import { guardConnections } from './connection-policy.js';
import { connectionGate } from './connections.js';
import { isLingering } from './linger.js';
import { closeListener, listen, listener } from './listener.js';
import { serverRoutes } from './own-routes.js';
import { RequestHandler } from './request-handler.js';
import { createRequestLog } from './request-log.js';
import { observerHealth, observerRoutes, observerSources, openObserver } from './serve-observer.js';
import { type ReservesOptions, reserveSources, startReserves } from './serve-reserves.js';
import { createStreams } from './streams.js';

export { DEFAULT_SERVER_LIMITS, type ServerLimits } from './client-limits.js';

export { MIN_POSITION_WAIT_MS } from './min-position.js';

/**
 * Options of {@link startServer}: the service's own options (the operators, the chain
 * bounds, what a loosening waits for, CORS), each meaning what it means to `createService`,
 * and the server's.
 */
export interface ServerOptions
  extends Pick<
    ServiceOptions,
    'adminToken' | 'operators' | 'chainBounds' | 'loosening' | 'cors' | 'cacheMaxAge'
  > {
  /** The event log, opened: `openDataLog` or `openPgLog`; the server closes it. */
  readonly log: EventLog;
  readonly host?: string | undefined;
  /** 0 picks a free port. */
  readonly port?: number | undefined;
  /**
   * Where one text line per answered request goes (and a line for each connection closed
   * with answers unread); none when undefined.
   */
  readonly logRequestText?: ((line: string) => void) | undefined;
  /**
   * The old name of `logRequestText`.
   *
   * @deprecated Use `logRequestText`: elsewhere `logLine` is where notes and warnings go,
   * here it took the request lines. Still taken when `logRequestText` is not given.
   */
  readonly logLine?: ((line: string) => void) | undefined;
  /** Takes each answered request as fields instead (the command's JSON log); wins over `logRequestText`. */
  readonly logRequest?: ((line: RequestLine) => void) | undefined;
  /** Where warnings go (metrics off for want of prom-client); none when undefined. */
  readonly warn?: ((line: string) => void) | undefined;
  /**
   * `GET /metrics` in the Prometheus format (default true: served when the optional
   * `prom-client` package is installed, with a warning when it is not); false turns it off.
   */
  readonly metrics?: boolean | undefined;
  /** How the caller turns metrics off, named in the warning when they cannot be served. @internal */
  readonly metricsOffHint?: string | undefined;
  /** Alerts (`--alert-url`): what operators are told (throttle mode, keys, limits, pending changes, held blocks); none when undefined. */
  readonly alerts?: AlertOptions | undefined;
  /**
   * The connections' limits (time-outs, caps, lingering close); unset fields take
   * {@link DEFAULT_SERVER_LIMITS}. Not the caps of the limits state: those are the log's
   * state.
   */
  readonly connectionLimits?: Partial<ServerLimits> | undefined;
  /**
   * The old name of `connectionLimits`.
   *
   * @deprecated Use `connectionLimits`: this name reads as the caps, which it is not. Still
   * taken when `connectionLimits` is not given.
   */
  readonly limits?: Partial<ServerLimits> | undefined;
  /**
   * A second listener for a Stacks node's event observer (`POST /new_block`), which feeds
   * the chain's blocks as the operator `stacks-node` with the chain scope; none when undefined.
   * @internal
   */
  readonly stacksObserver?: StacksObserverOptions | undefined;
  /**
   * Reads the reserves that back the peg from Bitcoin Core after each burn block
   * (`--bitcoin-rpc`); none when undefined.
   * @internal
   */
  readonly reserves?: ReservesOptions | undefined;
}

/** A running server. */
export interface RunningServer {
  /** `http://host:port` */
  readonly url: string;
  /** The service: its `state` is what reads see. */
  readonly service: Service;
  /** The event log it serves from. */
  readonly log: EventLog;
  /** The log position of the state reads see now. */
  readonly position: number;
  /** The connections' limits in force (time-outs, caps, lingering close). */
  readonly connectionLimits: ServerLimits;
  /**
   * The old name of `connectionLimits`.
   *
   * @deprecated Use `connectionLimits`: this name reads as the caps, which it is not.
   */
  readonly limits: ServerLimits;
  /** Whether `GET /metrics` is served. */
  readonly metrics: boolean;
  /** `GET /events` streams open now. */
  readonly streams: number;
  /** The Stacks event observer's URL, when it is on. @internal */
  readonly stacksObserver?: string | undefined;
  /** Stops accepting, finishes the requests in flight, then closes the log. */
  close(): Promise<void>;
}

// No operators given.
const NO_OPERATORS: ReadonlyArray<Operator> = [];

const CAP_NAMES = new Set<string>([...CAP_FIELDS, 'accountCaps']);

/** Serves the interface over an open event log. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const { log: eventLog } = options;
  const log = requestTextOf(options);
  const { limits, linger } = limitsInForce(connectionLimitsOf(options));
  // At the cap, an idle connection gives way first, then the oldest stream: a crowd cannot
  // lock out the brake. (The streams are made below; the gate asks for them only later.)
  const gate = connectionGate(
    limits.maxConnections,
    (socket) => !isLingering(socket),
    () => streams.evictOldest(),
  );
  // The Stacks event observer and the reserves reader, started once the server listens.
  let observer: StacksObserver | undefined;
  let reader: ReservesReader | undefined;
  const alerts = alertsOf(options);
  // What the operators are told that is no change: one hook for the service, the feed and
  // the reserves reader.
  const onNotice = (notice: Notice) => alerts?.onNotice(notice);
  // Metrics (docs/operating.md, "Operating it"): on unless turned off, when prom-client is installed.
  const metrics = await metricsOf(options, {
    state: () => service.state,
    position: () => currentPosition(),
    writable: () => eventLog.writable,
    writeLock: () => eventLog.writeLock,
    notificationQueue: eventLog.notificationQueue,
    alertsPending: () => alerts?.pending,
    alertFailures: () => alerts?.failures,
    ready: () => eventLog.writable && !eventLog.catchingUp,
    ...observerSources(options, () => observer),
    ...reserveSources(() => reader),
  });
  const serviceOptions = {
    ...serviceOptionsOf(options),
    operators: operatorsOf(options.operators),
    routes: serverRoutes(metrics, [
      auditRoute(eventLog),
      ...observerRoutes(options, () => observer),
    ]),
  };
  const service = createService({
    ...serviceOptions,
    log: servedLog(options, metrics, alerts),
    health: observerHealth(eventLog, () => observer),
    onNotice,
  });
  // What the listener admits a request by, as the service reads it: the same options.
  const handleOptions = handleOptionsOf(serviceOptions);
  const limitsRequest = { method: 'GET', path: '/limits', headers: {} };
  const streams = createStreams(
    {
      watch: (fn) => service.watch(fn),
      state: () => service.state,
      limits: () => service.read(limitsRequest),
      position: () => currentPosition(),
    },
    limits,
  );
  // The log position of the state reads see, sent with every answer.
  let lastPosition = eventLog.positionOf(service.state) ?? 0;
  const currentPosition = () => {
    lastPosition = eventLog.positionOf(service.state) ?? lastPosition;
    return lastPosition;
  };

  const handler = requestHandlerOf(options, {
    limits,
    linger,
    gate,
    service,
    handleOptions,
    metrics,
    streams,
    position: currentPosition,
  });
  const server = listener(limits, handler);
  const stopGuard = guardConnections(server, {
    gate,
    limits,
    linger,
    exempt: (socket) => streams.carries(socket) || isLingering(socket),
    logLine: log,
  });
  const url = await listen(server, options.port ?? 8080, options.host ?? '127.0.0.1');
  observer = await openObserver(
    options,
    service,
    { logLine: log ?? options.warn, warn: options.warn, onNotice },
    async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      stopGuard();
    },
  );
  reader = startReserves(options, service, () => observer, onNotice);
  let closing: Promise<void> | undefined;
  return {
    url,
    service,
    log: eventLog,
    get position() {
      return currentPosition();
    },
    connectionLimits: limits,
    limits,
    metrics: metrics !== undefined,
    get streams() {
      return streams.count;
    },
    stacksObserver: observer?.url,
    close() {
      // Streams never end by themselves: end them first.
      streams.close();
      const observed = Promise.all([reader?.close(), observer?.close()]);
      closing ??= closeListener(server, stopGuard).then(async () => {
        await observed;
        await alerts?.close();
        await eventLog.close();
      });
      return closing;
    },
  };
}

// How the server takes each request: its answers, written and logged (and timed by the
// metrics), after admission, in the service's turn.
function requestHandlerOf(
  options: ServerOptions,
  parts: Pick<
    ConstructorParameters<typeof RequestHandler>[0],
    'limits' | 'gate' | 'service' | 'handleOptions' | 'metrics' | 'streams' | 'position'
  > & { readonly linger: Parameters<typeof createAnswers>[0]['linger'] },
): RequestHandler {
  const eventLog = options.log;
  const log = requestTextOf(options);
  const requestLog = createRequestLog({
    metrics: parts.metrics,
    logLine: log,
    logRequest: options.logRequest,
    position: parts.position,
  });
  const { send, early } = createAnswers({
    position: parts.position,
    storeUnavailable: () => !eventLog.writable,
    linger: parts.linger,
    logged: requestLog.logged,
  });
  return new RequestHandler({
    ...parts,
    requestLog,
    storeUnavailable: () =>
      eventLog.writable ? undefined : (eventLog.unavailable ?? 'out of reach'),
    send,
    early,
    log,
  });
}

// The connections' limits given (under either name), refused when they hold caps: from plain
// JavaScript, unchecked, caps would be ignored without a word.
function connectionLimitsOf(options: ServerOptions): Partial<ServerLimits> | undefined {
  const connectionLimits = options.connectionLimits ?? options.limits;
  const capFields = Object.keys(connectionLimits ?? {}).filter((k) => CAP_NAMES.has(k));
  if (capFields.length > 0)
    throw new LimitsError(
      'invalid_option',
      `startServer({ ${options.connectionLimits !== undefined ? 'connectionLimits' : 'limits'} }) takes the connections' limits (${Object.keys(DEFAULT_SERVER_LIMITS).slice(0, 3).join(', ')}, …), not caps: ${capFields.join(', ')} belong in the log's initial state (createLimitsState({ limits }) given to openDataLog or openPgLog)`,
    );
  return connectionLimits;
}

// Metrics (docs/operating.md, "Operating it"): on unless turned off, when prom-client is
// installed; without it, a warning that names how the caller turns them off.
async function metricsOf(
  options: ServerOptions,
  sources: Parameters<typeof createMetrics>[0],
): Promise<ServerMetrics | undefined> {
  if (options.metrics === false) return undefined;
  try {
    return await createMetrics(sources);
  } catch (e) {
    if (!(e instanceof MetricsUnavailable)) throw e;
    options.warn?.(
      `warning: ${e.message} (${options.metricsOffHint ?? 'metrics: false'}); serving without metrics`,
    );
    return undefined;
  }
}

// The operators in force: the given ones, a list or a function read at every request.
function operatorsOf(given: ServerOptions['operators']): () => ReadonlyArray<Operator> {
  return () => (typeof given === 'function' ? given() : given) ?? NO_OPERATORS;
}

// The service's own options, as the server was given them.
function serviceOptionsOf(options: ServerOptions) {
  const { adminToken, chainBounds, loosening, cors, cacheMaxAge } = options;
  return { adminToken, chainBounds, loosening, cors, cacheMaxAge };
}

// Alerts for every change that is not chain traffic, delivered from the audit trail.
function alertsOf(options: ServerOptions): Alerts | undefined {
  if (options.alerts === undefined || options.alerts.urls.length === 0) return undefined;
  return createAlerts(
    { ...options.alerts, logLine: options.alerts.logLine ?? options.warn },
    { log: options.log, cursors: options.alerts.cursors ?? memoryCursors() },
  );
}

// Where the request lines go: `logRequestText`, or its old name.
function requestTextOf(options: ServerOptions): ((line: string) => void) | undefined {
  return options.logRequestText ?? options.logLine;
}

// The log the service writes through: timed by the metrics, watched by the alerts, and
// telling what became of pending changes (proposed, applied, dropped, cancelled).
function servedLog(
  options: ServerOptions,
  metrics: ServerMetrics | undefined,
  alerts: Alerts | undefined,
): EventLog {
  let served = options.log;
  if (metrics !== undefined) served = metrics.timed(served);
  if (alerts !== undefined) served = alerts.watch(served);
  const say = options.warn ?? requestTextOf(options);
  if (say !== undefined) served = recordChanges(served, say);
  return served;
}
