/**
 * The event log on PostgreSQL (docs/replicas.md), shared by every replica; it keeps the
 * {@link EventLog} contract with many writers.
 *
 * One table of batches (`seq bigint primary key`, the exact `encodeJson` text of an accepted
 * request's events, a timestamp) and one of snapshots keyed by the `seq` they include. A
 * replica keeps the state in memory. To accept changes it opens a transaction, takes the
 * write lock (a transaction-level advisory lock, waited for at most `lockWaitMs`, then
 * {@link LogBusy}), applies the rows other replicas committed before it, lets the service
 * compute the changes on that state, inserts their rows, `NOTIFY`s the others and commits:
 * the lock is released with the commit, or with the connection of a replica that dies
 * holding it. So no insert can collide, every replica applies one total order, and nothing
 * acknowledged is lost or applied twice. The changes a replica computes while its lock is
 * held go in one transaction (group commit). Followers apply new rows in `seq` order, woken
 * by `LISTEN` and by a short poll: from the rows a commit's notification carries when they
 * follow on from their position, else read from the table. Node-only.
 */

import {
  applyAll,
  type EventLog,
  type LimitsState,
  LogBusy,
  LogConflict,
  LogUnavailable,
} from 'peg-limits';
import type pg from 'pg';
import { encodeBatch, located, serialQueue } from '../internal.js';
import { makeRecord, ZERO_HASH } from './audit.js';
import { NEWEST_RECORD, trailTail } from './pg-audit.js';
import { connectClient, PgLogError, serversOf } from './pg-connect.js';
import {
  announced,
  type BatchRow,
  commitStatement,
  following,
  NEWEST_SEQ,
  queueUsage,
  READ_ROWS,
  readAfter,
} from './pg-rows.js';
import {
  CHANNEL,
  connectionLost,
  DEFAULT_KEEP_BATCHES,
  DEFAULT_PG_SNAPSHOT_EVERY,
  DEFAULT_SNAPSHOT_SLICE,
  ensureSchema,
  loadSnapshot,
  parseBatch,
  writeSnapshotRows,
} from './pg-tables.js';
import { redactStore } from './redact.js';

export { PgLogError } from './pg-connect.js';

export {
  DEFAULT_KEEP_BATCHES,
  DEFAULT_PG_SNAPSHOT_EVERY,
  DEFAULT_SNAPSHOT_SLICE,
  migrateToPg,
  PG_SCHEMA_VERSION,
} from './pg-tables.js';

/** The key of the advisory lock a replica holds from catching up to committing its rows. */
export const WRITE_LOCK = 7_417_003;
/** How long a write waits for other replicas to release the write lock, unless configured. */
export const DEFAULT_LOCK_WAIT_MS = 2_000;

/** Options of {@link openPgLog}. */
export interface PgLogOptions {
  /** A PostgreSQL connection string (`postgres://user@host/db`). */
  readonly url: string;
  /** The state of an empty database (from the configuration); written as snapshot 0. */
  readonly initial: LimitsState;
  /** Batches between two snapshot rows (default 1000). */
  readonly snapshotEvery?: number | undefined;
  /** Batch rows kept behind the newest snapshot; older ones are deleted (default 10,000). */
  readonly keepBatches?: number | undefined;
  /** How often to look for rows a lost notification did not announce (default 200 ms). */
  readonly pollMs?: number | undefined;
  /** How long start-up waits for the database (default 15 s). */
  readonly connectTimeoutMs?: number | undefined;
  /** Withdrawals or entries in one part row of a snapshot (default 2,000). */
  readonly snapshotSlice?: number | undefined;
  /** How long a write waits for the write lock before the change is refused as busy (503 `write_conflict`; default 2 s). */
  readonly lockWaitMs?: number | undefined;
  /** Where warnings and reconnection notes go. */
  readonly logLine?: ((line: string) => void) | undefined;
  /**
   * When the audit trail's newest records do not link up: start a new chain that records
   * the break, instead of refusing to start.
   */
  readonly auditRepair?: boolean | undefined;
}

/**
 * An open log on PostgreSQL. `catchUp` takes the write lock (rejecting with `LogBusy` after
 * `lockWaitMs`) and resolves with the newest state; an append under it is the next row,
 * durable once its transaction commits, soon after. Both reject with `LogUnavailable` while
 * the database is out of reach (it is `writable` again once reconnected). `snapshot` writes
 * a snapshot row.
 */
export type PgLog = EventLog;

/**
 * Opens the log on PostgreSQL: creates the schema when missing (and snapshot 0 from
 * `initial`), loads the newest snapshot and the rows after it, and follows new rows.
 *
 * @throws PgLogError when the database cannot be reached in time, holds another schema
 *   version, or holds a row that cannot be read or applied
 */
export async function openPgLog(options: PgLogOptions): Promise<PgLog> {
  const { url, logLine: log } = options;
  const snapshotEvery = options.snapshotEvery ?? DEFAULT_PG_SNAPSHOT_EVERY;
  const keepBatches = options.keepBatches ?? DEFAULT_KEEP_BATCHES;
  const pollMs = options.pollMs ?? 200;
  const slice = options.snapshotSlice ?? DEFAULT_SNAPSHOT_SLICE;
  const positions = new WeakMap<LimitsState, number>();
  const listeners: Array<(state: LimitsState, position: number) => void> = [];

  let client: pg.Client | undefined;
  let listener: pg.Client | undefined;
  let connected = false;
  // From a reconnection until the rows written meanwhile are applied.
  let catching = false;
  let closing = false;
  let backoff = 100;
  let reconnectTimer: ReturnType<typeof setTimeout> | undefined;

  // A connection string this release cannot read fails at once, not after the wait below.
  serversOf(url);
  // Start-up: wait for the database for a while (it may be starting too).
  const until = Date.now() + (options.connectTimeoutMs ?? 15_000);
  for (;;) {
    try {
      client = await connectClient(url);
      break;
    } catch (e) {
      if (Date.now() > until)
        throw new PgLogError(
          `cannot reach the database at ${redactStore(url)}: ${(e as Error).message}`,
        );
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  await ensureSchema(client);
  const any = await client.query('SELECT 1 FROM peg_limits_snapshots LIMIT 1');
  if (any.rows.length === 0) await writeSnapshotRows(client, 0, options.initial, slice);
  const newest = await client.query(
    'SELECT seq, snapshot, parts FROM peg_limits_snapshots ORDER BY seq DESC LIMIT 1',
  );
  let position = Number(newest.rows[0].seq);
  let state = await loadSnapshot(client, newest.rows[0]);
  positions.set(state, position);
  // What is committed: `state` and `position` run ahead of it while a write transaction
  // holds rows not yet committed, and fall back to it when that transaction fails.
  let committedState = state;
  let committedPosition = position;
  const lockWaitMs = Math.max(1, Math.round(options.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS));
  // What this replica has spent on the write lock (for the metrics).
  const lock = { transactions: 0, waitedSeconds: 0, heldSeconds: 0, timeouts: 0 };

  // Appends, catch-ups and snapshots change or read `state` and `position`: one at a time.
  const lane = serialQueue();
  const serial = lane.run;

  // Set when a row cannot be read or applied here (a newer release may have written it), or
  // when the database turns out to be behind this replica: the replica keeps its state, takes
  // no writes and follows no further; said once. (At start-up the error itself is thrown.)
  let halted: string | undefined;
  let started = false;
  function halt(reason: string, until = 'until it runs a release that reads that row'): void {
    if (halted !== undefined) return;
    halted = `${reason}: this replica keeps its state at position ${position} and takes no writes ${until}`;
    if (started) log?.(`warning: ${halted}`);
  }

  // Applies the rows after `position`, in order; loads a newer snapshot first when the rows
  // it would need were pruned. `first`: the answer of that query already (`readAfter`). The
  // rows applied before a failure (a row that does not apply, a lost connection) are kept.
  async function catchUp(first?: ReadonlyArray<BatchRow>): Promise<boolean> {
    const c = client;
    if (c === undefined || !connected || halted !== undefined) return false;
    const before = position;
    try {
      for (let read = first; ; read = undefined) {
        const rows = read ?? ((await c.query(readAfter(position))).rows as BatchRow[]);
        if (rows.length === 0) break;
        if (Number(rows[0]!.seq) !== position + 1) {
          const snap = await c.query(
            'SELECT seq, snapshot, parts FROM peg_limits_snapshots WHERE seq > $1 ORDER BY seq DESC LIMIT 1',
            [position],
          );
          if (snap.rows.length === 0)
            throw new PgLogError(
              `rows after ${position} are missing and no newer snapshot holds them`,
            );
          state = await loadSnapshot(c, snap.rows[0]);
          position = Number(snap.rows[0].seq);
          continue;
        }
        for (const row of rows) {
          const seq = Number(row.seq);
          const r = applyAll(state, parseBatch(row.events as string, seq));
          if (!r.ok) throw new PgLogError(`batch ${seq} does not apply: ${located(r.error)}`);
          state = r.state;
          position = seq;
        }
        if (rows.length < READ_ROWS) break;
      }
      catching = false;
    } catch (e) {
      if (e instanceof PgLogError) halt(e.message);
      throw e;
    } finally {
      committedState = state;
      committedPosition = position;
      if (position !== before) {
        positions.set(state, position);
        for (const fn of listeners) fn(state, position);
      }
    }
    return position !== before;
  }

  // Notifications that arrive while a catch-up waits its turn are served by it: one query
  // for any number of them, or none when each carried its rows and those follow on from this
  // replica's position without a gap. `read`: a notification that named a position only
  // (or the poll, or a reconnection) asks for a query.
  let followWaiting = false;
  let carried: BatchRow[] = [];
  let read = false;
  function follow(rows?: ReadonlyArray<BatchRow>): void {
    if (closing || !connected) return;
    if (rows === undefined || carried.length + rows.length > READ_ROWS) {
      read = true;
      carried = [];
    } else carried.push(...rows);
    if (followWaiting) return;
    followWaiting = true;
    serial(() => {
      followWaiting = false;
      const got = carried.filter((r) => Number(r.seq) > position);
      const query = read || !following(got, position);
      carried = [];
      read = false;
      // Under the write lock this replica is the newest already, and no one else commits.
      if (txn !== undefined) return false;
      // Rows it has already (its own commits' among them): nothing to read.
      if (got.length === 0 && !query) return false;
      return catchUp(query ? undefined : got);
    })
      // A row that cannot be applied was said once already (halt).
      .catch((e: unknown) => (e instanceof PgLogError ? undefined : lost(e)));
  }

  // The newest audit record's hash, read under the write lock with the rows before it.
  let newestHash = ZERO_HASH;

  // The write transaction: open from taking the lock until its commit settles. The rows
  // appended under it, with the state after each; `done` settles with the commit.
  interface Transaction {
    readonly rows: Array<{
      seq: number;
      text: string;
      state: LimitsState;
      /** The batch's audit record, and its hash. */
      record: string;
      hash: string;
    }>;
    /** The newest record's hash, as this transaction's rows move it on. */
    hash: string;
    /** When the lock's answer came (`performance.now()`). */
    readonly locked: number;
    readonly done: Promise<void>;
    resolve(): void;
    reject(e: Error): void;
  }
  let txn: Transaction | undefined;

  // Opens a transaction, takes the write lock (waiting at most `lockWaitMs`) and applies
  // what other replicas committed before it. Runs in the lane; the commit is scheduled at
  // once, so a transaction lives only as long as the changes queued behind it take.
  async function begin(): Promise<void> {
    const c = client;
    if (halted !== undefined) throw new LogUnavailable(halted);
    if (c === undefined || !connected)
      throw new LogUnavailable(
        'the database is out of reach: changes are refused until it is back (reads go on)',
      );
    lock.transactions++;
    const asked = performance.now();
    let lockedAt: number | undefined;
    try {
      // One round trip: the lock (its wait bounded by lock_timeout, SQLSTATE 55P03), then the
      // rows after this replica's position, read by a statement of its own after the lock
      // was granted (read committed: it sees every row committed before).
      const results = (await c.query(
        `BEGIN; SET LOCAL lock_timeout = ${lockWaitMs}; SELECT pg_advisory_xact_lock(${WRITE_LOCK}); ${readAfter(position)}; ${NEWEST_RECORD}`,
      )) as unknown as pg.QueryResult[];
      lockedAt = performance.now();
      lock.waitedSeconds += (lockedAt - asked) / 1000;
      await catchUp(results[3]!.rows as BatchRow[]);
      newestHash = (results[4]!.rows[0]?.hash as string | undefined) ?? ZERO_HASH;
    } catch (e) {
      if (lockedAt === undefined) lock.waitedSeconds += (performance.now() - asked) / 1000;
      await c.query('ROLLBACK').catch(() => undefined);
      if (lockedAt !== undefined) lock.heldSeconds += (performance.now() - lockedAt) / 1000;
      if ((e as { code?: string }).code === '55P03') {
        lock.timeouts++;
        throw new LogBusy(
          `other replicas held the write lock for over ${lockWaitMs / 1000} s; try again`,
        );
      }
      if (connectionLost(e)) lost(e);
      if (halted !== undefined) throw new LogUnavailable(halted);
      throw new LogUnavailable(
        `the write lock could not be taken (${(e as Error).message}); nothing was written`,
      );
    }
    let resolve!: () => void;
    let reject!: (e: Error) => void;
    const done = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    done.catch(() => undefined);
    const t: Transaction = { rows: [], hash: newestHash, locked: lockedAt, done, resolve, reject };
    txn = t;
    // Every change already queued behind this one is computed (in microtasks) before this
    // runs: they all go in this transaction.
    setImmediate(() => {
      serial(() => commit(t)).catch(() => undefined);
    });
  }

  // Inserts the transaction's rows, notifies the other replicas and commits (releasing the
  // lock); on a failure rolls back to what is committed, and no row of it is acknowledged.
  async function commit(t: Transaction): Promise<void> {
    const c = client;
    try {
      if (c === undefined || !connected) throw new Error('the database connection was lost');
      await c.query(commitStatement(c, t.rows));
    } catch (e) {
      await c?.query('ROLLBACK').catch(() => undefined);
      released(t);
      for (const r of t.rows) positions.delete(r.state);
      state = committedState;
      position = committedPosition;
      txn = undefined;
      if (connectionLost(e)) lost(e);
      else if (t.rows.length > 0) log?.(`warning: a commit failed: ${(e as Error).message}`);
      t.reject(
        new LogUnavailable(
          `the change could not be committed (${(e as Error).message}); it was not acknowledged`,
        ),
      );
      return;
    }
    released(t);
    committedState = state;
    committedPosition = position;
    txn = undefined;
    t.resolve();
    for (const r of t.rows)
      if (r.seq % snapshotEvery === 0)
        snapshotAt(r.state, r.seq).catch((e: unknown) =>
          log?.(`warning: snapshot ${r.seq} failed: ${(e as Error).message}`),
        );
  }

  // The lock went with the commit or the rollback (counted before anyone is answered).
  function released(t: Transaction): void {
    lock.heldSeconds += (performance.now() - t.locked) / 1000;
  }

  function lost(e: unknown): void {
    if (closing) return;
    if (!connectionLost(e)) {
      log?.(`warning: ${(e as Error).message}`);
      return;
    }
    if (connected)
      log?.(
        `warning: the database connection was lost (${(e as Error).message}); reads go on from position ${position}, changes are refused until it is back`,
      );
    connected = false;
    for (const c of [client, listener]) c?.end().catch(() => undefined);
    client = undefined;
    listener = undefined;
    reconnectTimer ??= setTimeout(reconnect, backoff);
  }

  async function reconnect(): Promise<void> {
    reconnectTimer = undefined;
    if (closing) return;
    try {
      await attach();
      catching = true;
      backoff = 100;
      log?.(`the database connection is back; catching up from position ${position}`);
      follow();
    } catch (e) {
      backoff = Math.min(backoff * 2, 5_000);
      for (const c of [client, listener]) c?.end().catch(() => undefined);
      client = undefined;
      listener = undefined;
      connected = false;
      if (!closing) reconnectTimer = setTimeout(reconnect, backoff);
      void e;
    }
  }

  // (Re)connects both clients and listens for new rows.
  async function attach(): Promise<void> {
    client ??= await connectClient(url);
    listener = await connectClient(url);
    for (const c of [client, listener]) {
      c.removeAllListeners('error');
      c.on('error', (e) => lost(e));
      c.on('end', () => lost(Object.assign(new Error('Connection terminated'), { code: '08006' })));
    }
    listener.on('notification', (n) => follow(announced(n.payload)));
    await listener.query(`LISTEN ${CHANNEL}`);
    // A database whose newest row is older than what this replica applied has lost commits
    // (a failover to a standby that did not have them): writing on would leave a gap in the
    // log and a state that no replica started from the database can have.
    const newest = Number((await client.query(NEWEST_SEQ)).rows[0].newest);
    if (newest < committedPosition)
      halt(
        `the database's newest row is ${newest}, behind this replica's position ${committedPosition} (commits it applied are not in the database, as after a failover to a standby that did not have them)`,
        'until it is restarted, to start from what the database holds',
      );
    connected = true;
  }

  // Past a break (--audit-repair): the next record starts a new chain that says where and why.
  let repair: { after: number; reason: string } | undefined;
  try {
    await attach();
    await serial(catchUp);
    const broken = await trailTail(client!);
    if (broken !== undefined) {
      if (options.auditRepair !== true)
        throw new PgLogError(
          `the audit trail breaks at position ${broken.position}: ${broken.why}; refusing to start (peg-limits audit verify --store … checks the whole trail; --audit-repair starts a new chain that records the break)`,
        );
      repair = { after: broken.position - 1, reason: broken.why };
    }
  } catch (e) {
    // Not started (a row that cannot be applied, say): nothing is left open.
    closing = true;
    for (const c of [client, listener]) await c?.end().catch(() => undefined);
    throw e;
  }
  started = true;
  const poll = setInterval(follow, pollMs);
  poll.unref();

  // Any replica writes a snapshot every `snapshotEvery` batches, then prunes what lies far
  // enough behind it. It is written on a connection of its own, in slices, beside the
  // appends (the state cannot change under it); one at a time.
  let snapshotting: Promise<void> = Promise.resolve();
  function snapshotAt(at: LimitsState, seq: number): Promise<void> {
    const run = snapshotting.then(async () => {
      const c = await connectClient(url);
      try {
        const bytes = await writeSnapshotRows(c, seq, at, slice);
        await c.query('DELETE FROM peg_limits_batches WHERE seq <= $1', [seq - keepBatches]);
        await c.query('DELETE FROM peg_limits_snapshot_parts WHERE seq <= $1', [seq - keepBatches]);
        await c.query('DELETE FROM peg_limits_snapshots WHERE seq <= $1', [seq - keepBatches]);
        if (bytes > 0) log?.(`snapshot ${seq} written (${bytes} bytes)`);
      } finally {
        await c.end().catch(() => undefined);
      }
    });
    snapshotting = run.catch(() => undefined);
    return run;
  }

  const pgLog: PgLog = {
    get state() {
      return state;
    },
    positionOf: (s) => positions.get(s),
    get position() {
      return position;
    },
    get writable() {
      return connected && halted === undefined;
    },
    get unavailable() {
      if (halted !== undefined) return halted;
      return connected ? undefined : 'the database is out of reach';
    },
    get catchingUp() {
      return connected && catching;
    },
    get writeLock() {
      return { ...lock };
    },
    // Asked on the listening connection, which is idle between notifications (the other one
    // may be inside a write transaction); a scrape waits for it at most a second.
    notificationQueue: () => (connected ? queueUsage(listener) : Promise.resolve(undefined)),
    append(events, next, base, meta) {
      return serial(async () => {
        // Not under the lock yet (no catch-up came first, or it failed): take it now.
        if (txn === undefined) await begin();
        const t = txn as Transaction | undefined;
        if (t === undefined) throw new LogUnavailable('the write transaction was lost');
        // Computed on a state that is not the newest: another writer's rows came first.
        if (base !== state) throw new LogConflict(state, 'the log moved on before this change');
        const seq = position + 1;
        const record = makeRecord(
          repair === undefined ? t.hash : ZERO_HASH,
          seq,
          events,
          meta,
          { base, next },
          repair === undefined ? {} : { repair },
        );
        repair = undefined;
        t.rows.push({
          seq,
          text: encodeBatch(events),
          state: next,
          record: record.line,
          hash: record.hash,
        });
        t.hash = record.hash;
        state = next;
        position = seq;
        positions.set(next, seq);
        return { position: seq, durable: t.done };
      });
    },
    follow(fn) {
      listeners.push(fn);
      return () => {
        const i = listeners.indexOf(fn);
        if (i >= 0) listeners.splice(i, 1);
      };
    },
    async catchUp(current) {
      // Takes the write lock, unless this replica holds it already: the change that follows
      // is computed on the newest state, and its append cannot collide.
      await serial(async () => {
        if (txn === undefined) await begin();
      });
      if (current === state) return undefined;
      // Behind the newest, or a state whose write failed: go on from the newest.
      const at = positions.get(current);
      return at === undefined || at < position ? state : undefined;
    },
    audit(after, limit) {
      return serial(async () => {
        const c = client;
        if (c === undefined || !connected)
          throw new LogUnavailable('the database is out of reach: the audit trail cannot be read');
        const { rows } = await c.query(
          'SELECT record FROM peg_limits_audit WHERE seq > $1 ORDER BY seq LIMIT $2',
          [after, limit],
        );
        return rows.map((r) => String(r.record));
      });
    },
    async snapshot() {
      if (!connected) throw new LogUnavailable('the database is out of reach');
      await snapshotAt(committedState, committedPosition);
    },
    async close() {
      closing = true;
      clearInterval(poll);
      if (reconnectTimer !== undefined) clearTimeout(reconnectTimer);
      await lane.idle();
      // A transaction still open commits first (its commit is queued behind the lane).
      await txn?.done.catch(() => undefined);
      await lane.idle();
      await snapshotting;
      for (const c of [client, listener]) await c?.end().catch(() => undefined);
    },
  };
  // Past a break (--audit-repair): the repair record goes in now, as a batch of no events.
  if (repair !== undefined) {
    const note = await pgLog.append([], state, state);
    await note.durable;
    log?.(
      `warning: the audit trail broke; --audit-repair started a new chain at position ${note.position}`,
    );
  }
  return pgLog;
}
