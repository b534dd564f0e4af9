/**
 * Alerts (`--alert-url`, docs/operating.md "Alerts"): every change that is not chain
 * traffic, posted to each URL as `{ type, position, at, actor, … }`. Delivery follows the
 * audit trail, whose records carry the alerts of their batch: each URL has a cursor, the
 * last position delivered, kept durably (the data folder, or the database), so a restart or
 * a crash resumes where it stopped, however long the receiver was away. At least once, in
 * order per URL, with `Peg-Limits-Alert-Id` (the position and the alert's index in its
 * record) for the receiver to drop a repeat; signed with `--alert-secret` in Stripe's
 * scheme (`Peg-Limits-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">`).
 * A failure, a non-2xx answer or no answer within 5 s is retried, the pause doubling from
 * 1 s up to 5 minutes; an answer's body is never read. With replicas, the replica that holds
 * a URL's lease in the database delivers its alerts: each is sent once per change across
 * them. A refused jump past the chain bounds (`chainBoundRefused`) is no change and has no
 * record: it is sent from memory, beside the others. Node-only.
 */
import { createHash, createHmac } from 'node:crypto';
import { type EventLog, encodeJson, LimitsError, type Notice } from 'peg-limits';
import { observeAppends, redactAlertUrl } from '../ops/index.js';
import { type AuditRecord, readRecord, recordPosition } from './audit.js';

/** How long one attempt waits for an answer. */
export const ALERT_TIMEOUT_MS = 5_000;
/** The longest pause between two attempts. */
const ALERT_MAX_DELAY_MS = 5 * 60_000;
/** The fewest characters `--alert-secret` may have (128 bits). */
export const MIN_ALERT_SECRET_LENGTH = 22;

/** Where each URL's cursor is kept, and, with replicas, who delivers for it. */
export interface AlertCursors {
  /** The last position delivered to the URL of `key`, or undefined for a URL never seen. */
  load(key: string): Promise<number | undefined>;
  /** Records that every alert up to `position` was delivered to the URL of `key`. */
  save(key: string, position: number): Promise<void>;
  /**
   * Whether this process delivers for `key` now (replicas share a lease; one writer always
   * does). Asked before each round of delivery.
   */
  lead?(key: string): Promise<boolean>;
  /** Lets go of the leases (the server stops). */
  close?(): Promise<void>;
}

/**
 * Cursors kept in memory only: a restart forgets them (and a URL then starts from the
 * position it meets). For `startServer` without a store of its own; the command keeps them
 * in the data folder or the database.
 */
export function memoryCursors(): AlertCursors {
  const cursors = new Map<string, number>();
  return {
    load: async (key) => cursors.get(key),
    save: async (key, position) => {
      cursors.set(key, Math.max(position, cursors.get(key) ?? 0));
    },
  };
}

/** How a server posts its alerts (`startServer`'s `alerts`). */
export interface AlertOptions {
  /** Where alerts are posted (http or https). */
  readonly urls: ReadonlyArray<string>;
  /** Signs each POST (`Peg-Limits-Signature`); at least 22 characters. */
  readonly secret?: string | undefined;
  /** Where failures are told (`warning: …`). */
  readonly logLine?: ((line: string) => void) | undefined;
  /** One attempt's time-out (default 5 s). */
  readonly timeoutMs?: number | undefined;
  /** The first retry's pause, doubled each time up to `maxDelayMs` (default 1 s). */
  readonly firstDelayMs?: number | undefined;
  /** The longest pause (default 5 minutes). */
  readonly maxDelayMs?: number | undefined;
  /** Where the cursors are kept (default: in memory, lost with the process). */
  readonly cursors?: AlertCursors | undefined;
}

/** What delivery reads: the audit trail and the cursors. */
interface AlertSource {
  /** The log whose trail holds the alerts (its `audit` reads the records). */
  readonly log: EventLog;
  readonly cursors: AlertCursors;
}

/** The alerts of one server. */
export interface Alerts {
  /** `log`, waking delivery at each durable batch of this process. */
  watch(log: EventLog): EventLog;
  /** Posts a notice, an alert that is no change (it has no record), to every URL, from memory. */
  onNotice(notice: Notice): void;
  /** Alerts read but not yet delivered, over every URL. */
  readonly pending: number;
  /** Deliveries that failed so far (each attempt), over every URL. */
  readonly failures: number;
  /** Stops delivering (what is undelivered is resumed from the cursors at the next start). */
  close(): Promise<void>;
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

/** The key a URL's cursor is kept under (its SHA-256, so that no URL is written down). */
function cursorKey(url: string): string {
  return createHash('sha256').update(url).digest('hex').slice(0, 32);
}

/**
 * `Peg-Limits-Signature` of `body` at `t` (unix seconds): Stripe's scheme.
 *
 * @example
 * ```ts
 * signature('a-secret-of-22-characters', '{"type":"limitsChanged"}', 1767225600);
 * // 't=1767225600,v1=…' (64 hex digits)
 * ```
 */
function signature(secret: string, body: string, t: number): string {
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
}

const BATCH = 100;
const sleep = (ms: number) =>
  new Promise<void>((r) => {
    const t = setTimeout(r, ms);
    t.unref();
  });

// One POST: undefined when it was taken (2xx), else why not. The body of the answer is
// never read (a receiver cannot make the server buffer it).
async function postAlert(
  url: string,
  body: string,
  id: string,
  secret: string | undefined,
  timeoutMs: number,
): Promise<string | undefined> {
  const target = withoutCredentials(url);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'peg-limits-alert-id': id,
    ...target.headers,
  };
  if (secret !== undefined)
    headers['peg-limits-signature'] = signature(secret, body, Math.floor(Date.now() / 1000));
  try {
    const r = await fetch(target.url, {
      method: 'POST',
      headers,
      body,
      signal: AbortSignal.timeout(timeoutMs),
    });
    await r.body?.cancel().catch(() => undefined);
    return r.ok ? undefined : `answered ${r.status}`;
  } catch (e) {
    return (e as Error).name === 'TimeoutError'
      ? `no answer within ${timeoutMs} ms`
      : fetchFailure(e);
  }
}

// The records of trail lines; one that cannot be read is passed over, with a warning.
function readRecords(
  lines: ReadonlyArray<string>,
  logLine: ((line: string) => void) | undefined,
): AuditRecord[] {
  const records: AuditRecord[] = [];
  for (const line of lines) {
    const read = readRecord(line);
    if (read.ok) records.push(read.record);
    else logLine?.(`warning: an audit record cannot be read for alerts (${read.why}); passed over`);
  }
  return records;
}

// The options checked; the trail the alerts follow.
function checkAlerts(options: AlertOptions, source: AlertSource): NonNullable<EventLog['audit']> {
  const invalid = (message: string) => new LimitsError('invalid_option', message);
  for (const url of options.urls)
    if (!isAlertUrl(url)) throw invalid(`an alert URL must be http(s), got ${redactAlertUrl(url)}`);
  if (options.secret !== undefined && options.secret.length < MIN_ALERT_SECRET_LENGTH)
    throw invalid(
      `an alert secret must have at least ${MIN_ALERT_SECRET_LENGTH} characters, got ${options.secret.length}`,
    );
  const audit = source.log.audit;
  if (audit === undefined) throw invalid('alerts need a log that keeps an audit trail');
  return audit;
}

// Wakes what waits for news: `woken()` resolves at the next `poke()`.
function waker(): { readonly poke: () => void; readonly woken: () => Promise<void> } {
  let wake: (() => void) | undefined;
  let woken = Promise.resolve();
  const rewake = () => {
    woken = new Promise<void>((r) => {
      wake = r;
    });
  };
  rewake();
  return {
    poke() {
      wake?.();
      rewake();
    },
    woken: () => woken,
  };
}

// Posts an alert until it is taken, the pause growing, or until `stopped()`; each failure is
// counted (`failed`) and told. Resolves with whether it was taken.
async function deliver(
  options: AlertOptions,
  alert: {
    readonly url: string;
    readonly body: string;
    readonly id: string;
    readonly type: string;
  },
  stopped: () => boolean,
  failed: () => void,
): Promise<boolean> {
  const { url, body, id, type } = alert;
  const timeoutMs = options.timeoutMs ?? ALERT_TIMEOUT_MS;
  const maxDelay = options.maxDelayMs ?? ALERT_MAX_DELAY_MS;
  for (let delay = options.firstDelayMs ?? 1_000, tries = 1; !stopped(); tries++) {
    const failure = await postAlert(url, body, id, options.secret, timeoutMs);
    if (failure === undefined) return true;
    failed();
    if (stopped()) return false;
    options.logLine?.(
      `warning: the ${type} alert ${id} to ${redactAlertUrl(url)} failed (${failure}, attempt ${tries}); retrying in ${delay} ms`,
    );
    await sleep(delay);
    delay = Math.min(delay * 2, maxDelay);
  }
  return false;
}

/**
 * Alerts for `urls`, delivered from the trail of `source.log`.
 *
 * @throws LimitsError `invalid_option` when a URL is not http(s), the secret is shorter than
 *   22 characters, or the log keeps no audit trail
 */
export function createAlerts(options: AlertOptions, source: AlertSource): Alerts {
  const audit = checkAlerts(options, source);
  let closed = false;
  let failures = 0;
  const { poke, woken } = waker();
  const send = (url: string, body: string, id: string, type: string) =>
    deliver(
      options,
      { url, body, id, type },
      () => closed,
      () => failures++,
    );

  const queued = new Map<string, number>();
  // Told from memory, each after the records up to the log position it was told at.
  const memory = new Map<
    string,
    Array<{ body: string; id: string; type: string; position: number }>
  >();
  let notices = 0;

  // One URL: the alerts of the records after its cursor, in order, then those from memory.
  async function run(url: string): Promise<void> {
    const key = cursorKey(url);
    let cursor = await source.cursors.load(key);
    if (cursor === undefined) {
      // A URL never seen starts from now: it is told of changes from here on.
      cursor = source.log.position;
      await source.cursors.save(key, cursor);
    }
    // Delivers what memory holds up to `upTo` (every one when caught up with the trail).
    const fromMemory = async (upTo: number) => {
      const list = memory.get(url) ?? [];
      while (list.length > 0 && list[0]!.position <= upTo && !closed) {
        const next = list[0]!;
        if (await send(url, next.body, next.id, next.type)) list.shift();
      }
    };
    while (!closed) {
      await fromMemory(cursor);
      if (
        source.cursors.lead !== undefined &&
        !(await source.cursors.lead(key).catch(() => false))
      ) {
        // Another replica delivers the trail; what only this one was told goes from here.
        await fromMemory(Number.POSITIVE_INFINITY);
        await Promise.race([woken(), sleep(1_000)]);
        continue;
      }
      // Asked again: another replica may have delivered meanwhile.
      cursor = Math.max(cursor, (await source.cursors.load(key)) ?? cursor);
      let lines: ReadonlyArray<string>;
      try {
        lines = await audit!(cursor, BATCH);
      } catch {
        await sleep(1_000);
        continue;
      }
      if (lines.length === 0) {
        // Caught up with the trail: what memory holds goes now.
        await fromMemory(Number.POSITIVE_INFINITY);
        if ((memory.get(url)?.length ?? 0) === 0) await Promise.race([woken(), sleep(1_000)]);
        continue;
      }
      const records = readRecords(lines, options.logLine);
      // The backlog: what was read and waits.
      queued.set(
        url,
        records.reduce((n, r) => n + r.alerts.length, 0),
      );
      for (const r of records) {
        for (const [i, alert] of r.alerts.entries()) {
          const body = encodeJson({ ...alert, position: r.position, at: r.at, actor: r.actor });
          if (!(await send(url, body, `${r.position}-${i}`, alert.type))) return;
          queued.set(url, (queued.get(url) ?? 1) - 1);
        }
        cursor = r.position;
        if (r.alerts.length > 0) await source.cursors.save(key, cursor);
      }
      // Read up to a record that failed to read: go on after it.
      const last = lines[lines.length - 1]!;
      const position = recordPosition(last);
      if (position > cursor) cursor = position;
    }
  }

  const running = options.urls.map((url) =>
    run(url).catch((e: unknown) =>
      options.logLine?.(
        `warning: alerts to ${redactAlertUrl(url)} stopped: ${(e as Error).message}`,
      ),
    ),
  );

  return {
    watch: (log) => observeAppends(log, poke),
    onNotice(alert) {
      const at = new Date().toISOString();
      const body = encodeJson({ ...alert, position: source.log.position, at });
      const id = `notice-${Date.now()}-${notices++}`;
      for (const url of options.urls) {
        const list = memory.get(url) ?? [];
        list.push({ body, id, type: alert.type, position: source.log.position });
        memory.set(url, list);
      }
      poke();
    },
    get failures() {
      return failures;
    },
    get pending() {
      let n = 0;
      for (const v of queued.values()) n += v;
      for (const list of memory.values()) n += list.length;
      return n;
    },
    async close() {
      closed = true;
      poke();
      await Promise.race([
        Promise.all(running),
        sleep((options.timeoutMs ?? ALERT_TIMEOUT_MS) + 100),
      ]);
      await source.cursors.close?.();
    },
  };
}

/**
 * An alert URL as fetch takes it: a user and password in it go in an `Authorization: Basic`
 * header, as curl sends them (fetch refuses a URL that carries them).
 */
function withoutCredentials(url: string): {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
} {
  const u = new URL(url);
  if (u.username === '' && u.password === '') return { url, headers: {} };
  const basic = Buffer.from(
    `${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`,
  ).toString('base64');
  u.username = '';
  u.password = '';
  return { url: u.toString(), headers: { authorization: `Basic ${basic}` } };
}

/**
 * Why a fetch failed, in words that carry nothing of the URL: the HTTP client's own
 * messages may quote it whole (credentials and query string included).
 */
function fetchFailure(e: unknown): string {
  const cause = (e as { cause?: { code?: unknown } }).cause;
  const code = typeof cause?.code === 'string' ? cause.code : undefined;
  return code !== undefined ? `unreachable (${code})` : `the request failed (${(e as Error).name})`;
}
