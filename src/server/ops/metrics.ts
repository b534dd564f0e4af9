/**
 * Prometheus metrics of `peg-limits serve` (docs/operating.md, "Operating it"), made with `prom-client`, an optional
 * peer dependency loaded only here. The limit gauges are read from the state reads see at
 * each scrape, so they always equal what `GET /limits` and `GET /window` answer; the
 * request and persist figures are counted as they happen. Node-only.
 */

import {
  chainView,
  type EventLog,
  getLimits,
  type LimitsState,
  PegLimitsError,
  pendingChanges,
  type WriteLockFigures,
  windowOf,
} from 'peg-limits';
import type * as Prom from 'prom-client';
import { integrityMetrics } from './integrity-metrics.js';
import { observeAppends } from './observed-log.js';
import { loadPeer } from './peers.js';

/** The package to install is missing: the message names it. */
export class MetricsUnavailable extends PegLimitsError {
  override readonly name = 'MetricsUnavailable';

  constructor(message?: string, options?: { readonly cause?: unknown }) {
    super('metrics_unavailable', message, options);
  }
}

/** What the server needs of its metrics. */
export interface ServerMetrics {
  /** The content type of the exposition (`text/plain; version=0.0.4; charset=utf-8`). */
  readonly contentType: string;
  /** Counts one answered request: its route pattern (never the raw path) and status. */
  observeRequest(route: string, status: number, seconds: number): void;
  /** Wraps a log so that each append's write and flush (or commit) is timed. */
  timed(log: EventLog): EventLog;
  /** The exposition text. */
  render(): Promise<string>;
}

/** Where the gauges read from. */
interface MetricsSource {
  /** The state reads see. */
  state(): LimitsState;
  /** The log position of that state. */
  position(): number;
  /** Whether the log takes writes now. */
  writable(): boolean;
  /** What this writer has spent on a write lock it shares with others (replicas), if any. */
  writeLock?(): WriteLockFigures | undefined;
  /** The share of the database's notification queue in use (replicas), if the log has one. */
  readonly notificationQueue?: (() => Promise<number | undefined>) | undefined;
  /** Alerts waiting to be delivered, when alerts are on. */
  alertsPending?(): number | undefined;
  /** Deliveries of alerts that failed so far, when alerts are on. */
  alertFailures?(): number | undefined;
  /** Whether the server is ready (GET /readyz: the state loaded, the log takes writes, not catching up). */
  ready(): boolean;
  /** What the Stacks event observer skipped so far, when it is on. */
  readonly observerSkipped?: (() => number) | undefined;
  /** The blocks the Stacks event observer holds, when it is on. */
  readonly observerHeld?: (() => number) | undefined;
  /** Starts from the node's state that failed, when the observer is on. */
  readonly observerStartFailures?: (() => number) | undefined;
  /** Rejections the node did not show (skipped), when the observer is on. */
  readonly observerRejectionsNotShown?: (() => number) | undefined;
  /** Readings of the reserves applied, when the base chain's reader is on. */
  readonly reservesReadings?: (() => number) | undefined;
  /** Calls to the base chain's node that failed, when the reader is on. */
  readonly bitcoinRpcFailures?: (() => number) | undefined;
}

// A counter read from a running total at each scrape (absent when `read` gives undefined).
function totalCounter(
  prom: typeof Prom,
  register: Prom.Registry,
  name: string,
  help: string,
  read: () => number | undefined,
): void {
  if (read() === undefined) return;
  new prom.Counter({
    name,
    help,
    registers: [register],
    collect() {
      this.reset();
      this.inc(read() ?? 0);
    },
  });
}

const EXACT = 'A float64: exact below 2^53 (90 million BTC in satoshis).';

function loadPromClient(): Promise<typeof Prom> {
  return loadPeer<typeof Prom>(
    'prom-client',
    () => import('prom-client'),
    (hint) => new MetricsUnavailable(`metrics need ${hint}, or turn them off`),
  );
}

// The Stacks event observer's: what it skipped and what it holds (when it is on).
function observerMetrics(
  prom: typeof Prom,
  register: Prom.Registry,
  gauge: (name: string, help: string, read: () => number | undefined) => unknown,
  source: MetricsSource,
): void {
  if (source.observerSkipped?.() !== undefined)
    new prom.Counter({
      name: 'peg_limits_observer_skipped_total',
      help: 'What the Stacks event observer could not use and skipped (answered 200, logged): payloads that are not blocks, print events that do not decode or do not fit, events the state refused.',
      registers: [register],
      collect() {
        this.reset();
        this.inc(source.observerSkipped?.() ?? 0);
      },
    });
  gauge(
    'peg_limits_observer_held_blocks',
    'Blocks the Stacks event observer holds (past the chain bounds, and every block after): nothing moves until an operator releases or drops them; absent when the observer is off.',
    () => source.observerHeld?.(),
  );
  totalCounter(
    prom,
    register,
    'peg_limits_observer_start_failures_total',
    "Starts from the Stacks node's state that failed (the RPC down, slow or answering what a node does not): the window stays incomplete until one succeeds.",
    () => source.observerStartFailures?.(),
  );
  totalCounter(
    prom,
    register,
    'peg_limits_observer_rejections_not_shown_total',
    "Withdrawal rejections a block carried that the node's own state did not show (skipped: a forgery, or a node that lies).",
    () => source.observerRejectionsNotShown?.(),
  );
}

// An amount as a gauge's value, absent while it is null.
const orAbsent = (v: bigint | null) => (v === null ? undefined : Number(v));

// The gauges read from the state reads see, at each scrape: what GET /limits and
// GET /window answer.
function stateGauges(
  gauge: (name: string, help: string, read: () => number | undefined) => unknown,
  source: MetricsSource,
): void {
  const limits = () => getLimits(source.state());
  gauge(
    'peg_limits_available_to_withdraw',
    `availableToWithdraw of GET /limits, in the smallest unit; absent while it is null. ${EXACT}`,
    () => orAbsent(limits().availableToWithdraw),
  );
  gauge(
    'peg_limits_rolling_withdrawn',
    `Withdrawn in the global rolling window (GET /window: withdrawn). ${EXACT}`,
    () => {
      const w = windowOf(source.state());
      return w === undefined ? undefined : Number(w.withdrawn);
    },
  );
  gauge(
    'peg_limits_rolling_withdrawal_cap',
    `The global rolling withdrawal cap in force, throttle overlay included; absent while unset. ${EXACT}`,
    () => orAbsent(limits().rollingWithdrawalCap),
  );
  gauge(
    'peg_limits_available_to_mint',
    `availableToMint of GET /limits: what the mint window still lets the signers mint, in the smallest unit; absent while it is null (no mint window, or its room unknown). ${EXACT}`,
    () => orAbsent(limits().availableToMint),
  );
  gauge(
    'peg_limits_rolling_mint_cap',
    `The global mint window's cap in force (the lower of the fixed cap and its share of the pegged total's lagged basis); absent while unset. ${EXACT}`,
    () => orAbsent(limits().rollingMintCap),
  );
  gauge('peg_limits_throttle_active', '1 while throttle mode is on, else 0.', () =>
    limits().throttleModeInitiator === null ? 0 : 1,
  );
  gauge('peg_limits_tip_height', 'The tip height; absent before any block.', () => {
    const tip = chainView(source.state()).tip;
    return tip === null ? undefined : tip;
  });
  gauge('peg_limits_log_position', 'The event-log position the state reflects.', () =>
    source.position(),
  );
  gauge('peg_limits_account_entries', 'Account entries held.', () => {
    const caps = limits().accountCaps;
    return caps instanceof Map ? caps.size : Object.keys(caps).length;
  });
  gauge(
    'peg_limits_pending_changes',
    'Pending changes: batches that loosen the limits, waiting for their height or their quorum.',
    () => pendingChanges(source.state()).length,
  );
  gauge(
    'peg_limits_window_complete',
    '1 while the global rolling window holds every height it covers, else 0 (it reaches below where the history starts, or blocks are held): then no room is reported.',
    () => (windowOf(source.state())?.complete === false ? 0 : 1),
  );
  gauge(
    'peg_limits_window_complete_at',
    'The tip at which an incomplete global window becomes complete; absent while complete, or while blocks are held (not known).',
    () => windowOf(source.state())?.completeAt ?? undefined,
  );
}

/**
 * Creates the metrics of one server, in a registry of their own (with prom-client's default
 * process metrics).
 *
 * @throws MetricsUnavailable when prom-client is not installed
 */
export async function createMetrics(source: MetricsSource): Promise<ServerMetrics> {
  const prom = await loadPromClient();
  const register = new prom.Registry();
  prom.collectDefaultMetrics({ register });
  // A gauge read from the current state at each scrape; `undefined` leaves it out.
  const gauge = (name: string, help: string, read: () => number | undefined) =>
    new prom.Gauge({
      name,
      help,
      registers: [register],
      collect() {
        this.reset();
        const value = read();
        if (value !== undefined) this.set(value);
      },
    });
  stateGauges(gauge, source);
  integrityMetrics(prom, register, gauge, source);
  gauge(
    'peg_limits_alerts_pending',
    'Alerts read from the audit trail (or refusals told from memory) and not yet delivered, over every --alert-url; absent when alerts are off.',
    () => source.alertsPending?.(),
  );
  totalCounter(
    prom,
    register,
    'peg_limits_alert_delivery_failures_total',
    'Alert deliveries that failed (no answer in time, an error, or a non-2xx answer), each attempt, over every --alert-url; absent when alerts are off.',
    () => source.alertFailures?.(),
  );
  gauge(
    'peg_limits_ready',
    '1 while GET /readyz answers 200 (the log takes writes, not catching up), else 0.',
    () => (source.ready() ? 1 : 0),
  );
  observerMetrics(prom, register, gauge, source);
  gauge('peg_limits_store_available', '1 when changes can be written, else 0.', () =>
    source.writable() ? 1 : 0,
  );
  // The two request series are counted in plain numbers per route and turned into the
  // exposition at each scrape: prom-client's labelled metrics hash their labels on every
  // call, which cost about a tenth of the throughput of GET /limits (measured).
  const routes = new Map<string, RouteSeries>();
  register.registerMetric(
    requestCounter(routes, 'peg_limits_http_requests_total') as unknown as Prom.Metric,
  );
  register.registerMetric(
    requestHistogram(routes, 'peg_limits_http_request_duration_seconds') as unknown as Prom.Metric,
  );
  register.registerMetric(authFailures(routes) as unknown as Prom.Metric);
  // Replicas on PostgreSQL: the write lock they share, as running totals read at each scrape.
  const lock = source.writeLock;
  if (lock?.() !== undefined)
    for (const [name, help, field] of WRITE_LOCK_COUNTERS)
      register.registerMetric(
        collector(name, help, 'counter', () => {
          const figures = lock();
          return figures === undefined ? [] : [{ labels: {}, value: figures[field] }];
        }) as unknown as Prom.Metric,
      );
  // Replicas on PostgreSQL: every replica that listens must read each commit's notification
  // before the database can drop it; one that stops reading (hung, or a session idle in a
  // transaction that listens) makes the queue grow, and when it is full commits fail.
  const queue = source.notificationQueue;
  if (queue !== undefined)
    new prom.Gauge({
      name: 'peg_limits_notification_queue_usage',
      help: "The share (0 to 1) of PostgreSQL's notification queue in use (pg_notification_queue_usage()). It grows while a session that listens does not read (a hung replica); at 1 every commit that notifies fails, so every change is refused.",
      registers: [register],
      async collect() {
        this.reset();
        const value = await queue();
        if (value !== undefined) this.set(value);
      },
    });
  const persist = new prom.Histogram({
    name: 'peg_limits_persist_duration_seconds',
    help: 'Time to make one accepted change durable: its journal write and flush, or its database commit.',
    buckets: [...BUCKETS],
    registers: [register],
  });
  return {
    contentType: register.contentType,
    observeRequest(route, status, seconds) {
      let series = routes.get(route);
      if (series === undefined) {
        series = {
          statuses: new Map(),
          buckets: new Float64Array(BUCKETS.length),
          sum: 0,
          count: 0,
        };
        routes.set(route, series);
      }
      series.statuses.set(status, (series.statuses.get(status) ?? 0) + 1);
      for (let i = 0; i < BUCKETS.length; i++)
        if (seconds <= BUCKETS[i]!) {
          series.buckets[i]!++;
          break;
        }
      series.sum += seconds;
      series.count++;
    },
    timed: (log) => observeAppends(log, ({ seconds }) => persist.observe(seconds)),
    render: () => register.metrics(),
  };
}

// The counters of a replica's write lock: name, help, and the figure each reads.
const WRITE_LOCK_COUNTERS: ReadonlyArray<readonly [string, string, keyof WriteLockFigures]> = [
  [
    'peg_limits_write_transactions_total',
    "Write transactions this replica opened, each taking the replicas' write lock (or trying to).",
    'transactions',
  ],
  [
    'peg_limits_write_lock_wait_seconds_total',
    'Seconds spent taking the write lock and reading the rows committed before it: a round trip, mostly waiting while other replicas hold the lock.',
    'waitedSeconds',
  ],
  [
    'peg_limits_write_lock_held_seconds_total',
    'Seconds this replica held the write lock, from its answer to the commit. Its rate is the share of time this replica holds it; summed over the replicas, near 1 means writes spread over them wait on each other.',
    'heldSeconds',
  ],
  [
    'peg_limits_write_lock_timeouts_total',
    'Changes refused (503 write_conflict) because the write lock was not free within the wait allowed.',
    'timeouts',
  ],
];

/** The upper bounds of the time histograms, in seconds. */
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5] as const;

// One route's requests: counts by status, and its times (per bucket, not yet cumulative).
interface RouteSeries {
  readonly statuses: Map<number, number>;
  readonly buckets: Float64Array;
  sum: number;
  count: number;
}

interface Value {
  readonly labels: Record<string, string>;
  readonly value: number;
  readonly metricName?: string;
}

// A metric as prom-client's registry reads one: a name, help, type and its values.
function collector(name: string, help: string, type: string, values: () => Value[]) {
  return {
    name,
    help,
    type,
    aggregator: 'sum',
    get: async () => ({ name, help, type, aggregator: 'sum', values: values() }),
    reset: () => undefined,
  };
}

function requestCounter(routes: Map<string, RouteSeries>, name: string) {
  return collector(
    name,
    'Answered requests, by route pattern (never the raw path) and status.',
    'counter',
    () =>
      [...routes].flatMap(([route, s]) =>
        [...s.statuses].map(([status, count]) => ({
          labels: { route, status: String(status) },
          value: count,
        })),
      ),
  );
}

// The routes that take credentials: their series are there from the start, at 0, so that a
// rule's increase() sees the first failures.
const CREDENTIAL_ROUTES = ['/start_throttle', '/admin/events'];

// Failed credentials by route: every 401 (a wrong operator token, an unknown key or a wrong
// secret), and a 403 of POST /start_throttle (the right secret of a revoked key).
function authFailures(routes: Map<string, RouteSeries>) {
  return collector(
    'peg_limits_auth_failures_total',
    'Requests refused for their credentials, by route pattern: an unknown or missing operator token, an unknown throttle key or a wrong secret (401), a revoked key (403 on /start_throttle).',
    'counter',
    () => {
      const values: Value[] = [];
      const seen = new Set<string>();
      for (const [route, s] of routes) {
        const failed =
          (s.statuses.get(401) ?? 0) +
          (route === '/start_throttle' ? (s.statuses.get(403) ?? 0) : 0);
        if (failed === 0 && !CREDENTIAL_ROUTES.includes(route)) continue;
        seen.add(route);
        values.push({ labels: { route }, value: failed });
      }
      for (const route of CREDENTIAL_ROUTES)
        if (!seen.has(route)) values.push({ labels: { route }, value: 0 });
      return values;
    },
  );
}

function requestHistogram(routes: Map<string, RouteSeries>, name: string) {
  return collector(name, 'Time from a request to its answer, by route pattern.', 'histogram', () =>
    [...routes].flatMap(([route, s]) => {
      const values: Value[] = [];
      let cumulative = 0;
      for (let i = 0; i < BUCKETS.length; i++) {
        cumulative += s.buckets[i]!;
        values.push({
          labels: { route, le: String(BUCKETS[i]) },
          value: cumulative,
          metricName: `${name}_bucket`,
        });
      }
      values.push({ labels: { route, le: '+Inf' }, value: s.count, metricName: `${name}_bucket` });
      values.push({ labels: { route }, value: s.sum, metricName: `${name}_sum` });
      values.push({ labels: { route }, value: s.count, metricName: `${name}_count` });
      return values;
    }),
  );
}
