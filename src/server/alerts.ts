/**
 * Alerts when throttle mode starts or ends (SPEC §10, `--alert-url`): a POST of
 * `{ type, initiator, position, at }` to each URL once the change is durable, sent by the
 * process that wrote the change (so once per change across replicas), retried with
 * exponential backoff on a failure, a time-out or a non-2xx answer, for at least
 * {@link ALERT_RETRY_MS}. Never awaited by a request: it cannot delay or fail one. Node-only.
 */
import { type EventLog, encodeJson, getLimits } from 'peg-limits';
import { observeAppends } from './observed-log.js';
import { redactAlertUrl } from './redact.js';

/** What is posted. */
export interface Alert {
  readonly type: 'throttleStarted' | 'throttleEnded';
  /** The key that started throttle mode (for `throttleEnded`, the one whose mode ended). */
  readonly initiator: string;
  /** The log position of the change. */
  readonly position: number;
  /** When the change was durable, as an ISO time. */
  readonly at: string;
}

/** How long a delivery keeps being retried, at least: 10 minutes. */
export const ALERT_RETRY_MS = 10 * 60_000;
/** How long one attempt waits for an answer. */
export const ALERT_TIMEOUT_MS = 5_000;

/** Options of {@link createAlerts}. */
export interface AlertOptions {
  /** Where alerts are posted (http or https). */
  readonly urls: ReadonlyArray<string>;
  /** Where failures are told (`warning: …`). */
  readonly logLine?: ((line: string) => void) | undefined;
  /** Retries go on for at least this long (default {@link ALERT_RETRY_MS}). */
  readonly retryMs?: number | undefined;
  /** One attempt's time-out (default {@link ALERT_TIMEOUT_MS}). */
  readonly timeoutMs?: number | undefined;
  /** The first retry's pause, doubled each time up to a minute (default 1 s). */
  readonly firstDelayMs?: number | undefined;
}

/** The alerts of one server. */
export interface Alerts {
  /** `log`, alerting on each durable batch of this process that starts or ends throttle mode. */
  watch(log: EventLog): EventLog;
  /** Posts one alert to every URL (in the background). */
  send(alert: Alert): void;
  /** Deliveries still under way (tests wait for them). */
  readonly pending: number;
  /** Stops retrying. */
  close(): void;
}

/** Whether `url` is an http(s) URL an alert can go to. */
export function isAlertUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

/**
 * Alerts for `urls`.
 *
 * @throws TypeError when a URL is not http(s)
 */
export function createAlerts(options: AlertOptions): Alerts {
  for (const url of options.urls)
    if (!isAlertUrl(url))
      throw new TypeError(`an alert URL must be http(s), got ${redactAlertUrl(url)}`);
  const retryMs = options.retryMs ?? ALERT_RETRY_MS;
  const timeoutMs = options.timeoutMs ?? ALERT_TIMEOUT_MS;
  const firstDelay = options.firstDelayMs ?? 1_000;
  const timers = new Set<ReturnType<typeof setTimeout>>();
  let pending = 0;
  let closed = false;

  async function attempt(url: string, body: string): Promise<string | undefined> {
    try {
      const r = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
      await r.arrayBuffer().catch(() => undefined);
      return r.ok ? undefined : `answered ${r.status}`;
    } catch (e) {
      return (e as Error).name === 'TimeoutError'
        ? `no answer within ${timeoutMs} ms`
        : (e as Error).message;
    }
  }

  function deliver(url: string, alert: Alert): void {
    const body = encodeJson(alert);
    const until = Date.now() + retryMs;
    pending++;
    const go = async (delay: number, tries: number) => {
      const failure = await attempt(url, body);
      if (failure === undefined || closed) {
        pending--;
        return;
      }
      if (Date.now() + delay > until) {
        pending--;
        options.logLine?.(
          `warning: the ${alert.type} alert at position ${alert.position} to ${redactAlertUrl(url)} was given up after ${tries} attempts: ${failure}`,
        );
        return;
      }
      options.logLine?.(
        `warning: the ${alert.type} alert to ${redactAlertUrl(url)} failed (${failure}); retrying in ${delay} ms`,
      );
      const timer = setTimeout(() => {
        timers.delete(timer);
        void go(Math.min(delay * 2, 60_000), tries + 1);
      }, delay);
      timer.unref();
      timers.add(timer);
    };
    void go(firstDelay, 1);
  }

  function send(alert: Alert): void {
    for (const url of options.urls) deliver(url, alert);
  }

  return {
    send,
    watch: (log) =>
      observeAppends(log, ({ base, next, position }) => {
        const before = getLimits(base).throttleModeInitiator;
        const after = getLimits(next).throttleModeInitiator;
        if (before === after) return;
        const at = new Date().toISOString();
        if (before !== null) send({ type: 'throttleEnded', initiator: before, position, at });
        if (after !== null) send({ type: 'throttleStarted', initiator: after, position, at });
      }),
    get pending() {
      return pending;
    },
    close() {
      closed = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
  };
}
