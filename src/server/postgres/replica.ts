/**
 * One replica's view of the log on PostgreSQL (`openPgLog` opens it): the state in memory,
 * the rows it applies as the others commit them (woken by `LISTEN`, and by a short poll), and
 * the write transaction it opens under the write lock for the changes it takes (group
 * commit). Its connections and their reconnection are `replica-connection.ts`'s, the lock
 * and the transaction's rows `write-transaction.ts`'s, the snapshot rows it writes
 * `replica-snapshots.ts`'s. Node-only.
 */
import {
  applyAll,
  type BatchMeta,
  type EventLog,
  type LimitsEvent,
  type LimitsState,
  LogConflict,
  LogUnavailable,
  PegLimitsError,
  type WriteLockFigures,
} from 'peg-limits';
import type pg from 'pg';
import { located, serialQueue } from '../../internal.js';
import { ZERO_HASH } from '../record/index.js';
import { PgLogError } from './connect.js';
import { ReplicaConnection } from './replica-connection.js';
import { SnapshotWriter } from './replica-snapshots.js';
import {
  type BatchRow,
  commitStatement,
  NEWEST_SEQ,
  NotifiedRows,
  queueUsage,
  READ_ROWS,
  readAfter,
  rowsOfNotification,
} from './rows.js';
import { connectionLost, newerSnapshot, parseBatch } from './tables.js';
import { auditRows } from './trail.js';
import {
  addRow,
  beginStatement,
  LockSpending,
  newTransaction,
  type Transaction,
} from './write-transaction.js';

export { WRITE_LOCK } from './write-transaction.js';

/** What a replica is opened with (`PgLogOptions` with their defaults). */
interface ReplicaSettings {
  readonly url: string;
  readonly snapshotEvery: number;
  readonly keepBatches: number;
  readonly slice: number;
  readonly lockWaitMs: number;
  readonly log: ((line: string) => void) | undefined;
}

/** A replica of the log on PostgreSQL, from a snapshot at `position` read on `client`. */
export class PgReplica implements EventLog {
  readonly #settings: ReplicaSettings;
  readonly #positions = new WeakMap<LimitsState, number>();
  readonly #listeners: Array<(state: LimitsState, position: number) => void> = [];
  // Appends, catch-ups and snapshots change or read `state` and `position`: one at a time.
  readonly #lane = serialQueue();
  // What this replica has spent on the write lock (for the metrics).
  readonly #lock = new LockSpending();
  readonly #db: ReplicaConnection;
  readonly #snapshots: SnapshotWriter;
  // From a reconnection until the rows written meanwhile are applied.
  #catching = false;
  #closing = false;
  #poll: ReturnType<typeof setInterval> | undefined;
  #state: LimitsState;
  #position: number;
  // What is committed: `state` and `position` run ahead of it while a write transaction
  // holds rows not yet committed, and fall back to it when that transaction fails.
  #committedState: LimitsState;
  #committedPosition: number;
  // Set when a row cannot be read or applied here (a newer release may have written it), or
  // when the database turns out to be behind this replica: the replica keeps its state, takes
  // no writes and follows no further; said once. (At start-up the error itself is thrown.)
  #halted: string | undefined;
  #started = false;
  // Notifications that arrive while a catch-up waits its turn are served by it: one query
  // for any number of them, or none when each carried its rows and those follow on from
  // this replica's position without a gap.
  #catchUpQueued = false;
  readonly #notified = new NotifiedRows();
  // The newest audit record's hash, read under the write lock with the rows before it.
  #newestHash = ZERO_HASH;
  #txn: Transaction | undefined;
  // Past a break (--audit-repair): the next record starts a new chain that says where and why.
  #repair: { after: number; reason: string } | undefined;

  constructor(settings: ReplicaSettings, client: pg.Client, state: LimitsState, position: number) {
    this.#settings = settings;
    this.#db = new ReplicaConnection(settings.url, client, {
      notified: (payload) => this.#follow(rowsOfNotification(payload)),
      failed: (e) => this.#lost(e),
      attached: (c) => this.#checkNotBehind(c),
      back: () => {
        this.#catching = true;
        this.#settings.log?.(
          `the database connection is back; catching up from position ${this.#position}`,
        );
        this.#follow();
      },
    });
    this.#snapshots = new SnapshotWriter(settings);
    this.#state = state;
    this.#position = position;
    this.#committedState = state;
    this.#committedPosition = position;
    this.#positions.set(state, position);
  }

  /**
   * Listens, applies the rows after the snapshot, and says where the audit trail breaks
   * (`check`, with the database's client); polls every `pollMs` from then on. Nothing is
   * left open when it fails.
   */
  async start(
    pollMs: number,
    check: (client: pg.Client) => Promise<{ after: number; reason: string } | undefined>,
  ): Promise<void> {
    try {
      await this.#db.attach();
      await this.#lane.run(() => this.#apply());
      this.#repair = await check(this.#db.client!);
    } catch (e) {
      // Not started (a row that cannot be applied, say): nothing is left open.
      this.#closing = true;
      this.#db.stop();
      await this.#db.end();
      throw e;
    }
    this.#started = true;
    this.#poll = setInterval(() => this.#follow(), pollMs);
    this.#poll.unref();
    // Past a break (--audit-repair): the repair record goes in now, as a batch of no events.
    if (this.#repair !== undefined) {
      const note = await this.append([], this.#state, this.#state);
      await note.durable;
      this.#settings.log?.(
        `warning: the audit trail broke; --audit-repair started a new chain at position ${note.position}`,
      );
    }
  }

  get state(): LimitsState {
    return this.#state;
  }

  get position(): number {
    return this.#position;
  }

  get writable(): boolean {
    return this.#db.connected && this.#halted === undefined;
  }

  get unavailable(): string | undefined {
    if (this.#halted !== undefined) return this.#halted;
    return this.#db.connected ? undefined : 'the database is out of reach';
  }

  get catchingUp(): boolean {
    return this.#db.connected && this.#catching;
  }

  get writeLock(): WriteLockFigures {
    return this.#lock.figures;
  }

  positionOf(state: LimitsState): number | undefined {
    return this.#positions.get(state);
  }

  // Properties, not methods: callers take them off the log and call them alone.
  /**
   * Asked on the listening connection, which is idle between notifications (the other one
   * may be inside a write transaction); a scrape waits for it at most a second.
   */
  readonly notificationQueue = (): Promise<number | undefined> =>
    this.#db.connected ? queueUsage(this.#db.listener) : Promise.resolve(undefined);

  readonly audit = (after: number, limit: number): Promise<ReadonlyArray<string>> =>
    this.#lane.run(async () => {
      const c = this.#db.client;
      if (c === undefined || !this.#db.connected)
        throw new LogUnavailable('the database is out of reach: the audit trail cannot be read');
      return auditRows(c, after, limit);
    });

  append(
    events: ReadonlyArray<LimitsEvent>,
    next: LimitsState,
    base: LimitsState,
    meta?: BatchMeta,
  ): Promise<{ position: number; durable: Promise<void> }> {
    return this.#lane.run(async () => {
      // Not under the lock yet (no catch-up came first, or it failed): take it now.
      if (this.#txn === undefined) await this.#begin();
      const t = this.#txn as Transaction | undefined;
      if (t === undefined) throw new LogUnavailable('the write transaction was lost');
      // Computed on a state that is not the newest: another writer's rows came first.
      if (base !== this.#state)
        throw new LogConflict(this.#state, 'the log moved on before this change');
      const seq = this.#position + 1;
      addRow(t, { seq, events, meta, base, next, repair: this.#repair });
      this.#repair = undefined;
      this.#state = next;
      this.#position = seq;
      this.#positions.set(next, seq);
      return { position: seq, durable: t.done };
    });
  }

  follow(fn: (state: LimitsState, position: number) => void): () => void {
    this.#listeners.push(fn);
    return () => {
      const i = this.#listeners.indexOf(fn);
      if (i >= 0) this.#listeners.splice(i, 1);
    };
  }

  async catchUp(current: LimitsState): Promise<LimitsState | undefined> {
    // Takes the write lock, unless this replica holds it already: the change that follows
    // is computed on the newest state, and its append cannot collide.
    await this.#lane.run(async () => {
      if (this.#txn === undefined) await this.#begin();
    });
    if (current === this.#state) return undefined;
    // Behind the newest, or a state whose write failed: go on from the newest.
    const at = this.#positions.get(current);
    return at === undefined || at < this.#position ? this.#state : undefined;
  }

  async snapshot(): Promise<void> {
    if (!this.#db.connected) throw new LogUnavailable('the database is out of reach');
    await this.#snapshots.write(this.#committedState, this.#committedPosition);
  }

  async close(): Promise<void> {
    this.#closing = true;
    clearInterval(this.#poll);
    this.#db.stop();
    await this.#lane.idle();
    // A transaction still open commits first (its commit is queued behind the lane).
    await this.#txn?.done.catch(() => undefined);
    await this.#lane.idle();
    await this.#snapshots.settled();
    await this.#db.end();
  }

  #halt(reason: string, until = 'until it runs a release that reads that row'): void {
    if (this.#halted !== undefined) return;
    this.#halted = `${reason}: this replica keeps its state at position ${this.#position} and takes no writes ${until}`;
    if (this.#started) this.#settings.log?.(`warning: ${this.#halted}`);
  }

  // Applies the rows after `position`, in order; loads a newer snapshot first when the rows
  // it would need were pruned. `first`: the answer of that query already (`readAfter`). The
  // rows applied before a failure (a row that does not apply, a lost connection) are kept.
  async #apply(first?: ReadonlyArray<BatchRow>): Promise<boolean> {
    const c = this.#db.client;
    if (c === undefined || !this.#db.connected || this.#halted !== undefined) return false;
    const before = this.#position;
    try {
      for (let read = first; ; read = undefined) {
        const rows = read ?? ((await c.query(readAfter(this.#position))).rows as BatchRow[]);
        if (rows.length === 0) break;
        if (Number(rows[0]!.seq) !== this.#position + 1) {
          await this.#loadNewerSnapshot(c);
          continue;
        }
        for (const row of rows) {
          const seq = Number(row.seq);
          const r = applyAll(this.#state, parseBatch(row.events as string, seq));
          if (!r.ok) throw new PgLogError(`batch ${seq} does not apply: ${located(r.error)}`);
          this.#state = r.state;
          this.#position = seq;
        }
        if (rows.length < READ_ROWS) break;
      }
      this.#catching = false;
    } catch (e) {
      if (e instanceof PgLogError) this.#halt(e.message);
      throw e;
    } finally {
      this.#committedState = this.#state;
      this.#committedPosition = this.#position;
      if (this.#position !== before) {
        this.#positions.set(this.#state, this.#position);
        for (const fn of this.#listeners) fn(this.#state, this.#position);
      }
    }
    return this.#position !== before;
  }

  // The rows after `position` were pruned: the newest snapshot past it holds them.
  async #loadNewerSnapshot(c: pg.Client): Promise<void> {
    const newer = await newerSnapshot(c, this.#position);
    if (newer === undefined)
      throw new PgLogError(
        `rows after ${this.#position} are missing and no newer snapshot holds them`,
      );
    this.#state = newer.state;
    this.#position = newer.position;
  }

  #follow(rows?: ReadonlyArray<BatchRow>): void {
    if (this.#closing || !this.#db.connected) return;
    this.#notified.add(rows);
    if (this.#catchUpQueued) return;
    this.#catchUpQueued = true;
    this.#lane
      .run(() => {
        this.#catchUpQueued = false;
        const { rows: got, query } = this.#notified.take(this.#position);
        // Under the write lock this replica is the newest already, and no one else commits.
        if (this.#txn !== undefined) return false;
        // Rows it has already (its own commits' among them): nothing to read.
        if (got.length === 0 && !query) return false;
        return this.#apply(query ? undefined : got);
      })
      // A row that cannot be applied was said once already (halt).
      .catch((e: unknown) => (e instanceof PgLogError ? undefined : this.#lost(e)));
  }

  // Opens a transaction, takes the write lock (waiting at most `lockWaitMs`) and applies
  // what other replicas committed before it. Runs in the lane; the commit is scheduled at
  // once, so a transaction lives only as long as the changes queued behind it take.
  async #begin(): Promise<void> {
    const c = this.#db.client;
    const lock = this.#lock;
    const { lockWaitMs } = this.#settings;
    if (this.#halted !== undefined) throw new LogUnavailable(this.#halted);
    if (c === undefined || !this.#db.connected)
      throw new LogUnavailable(
        'the database is out of reach: changes are refused until it is back (reads go on)',
      );
    lock.asked();
    const asked = performance.now();
    let lockedAt: number | undefined;
    try {
      // One round trip: the lock, the rows after this replica's position, the newest record.
      const results = (await c.query(
        beginStatement(lockWaitMs, this.#position),
      )) as unknown as pg.QueryResult[];
      lockedAt = performance.now();
      lock.waited((lockedAt - asked) / 1000);
      await this.#apply(results[3]!.rows as BatchRow[]);
      this.#newestHash = (results[4]!.rows[0]?.hash as string | undefined) ?? ZERO_HASH;
    } catch (e) {
      if (lockedAt === undefined) lock.waited((performance.now() - asked) / 1000);
      await c.query('ROLLBACK').catch(() => undefined);
      if (lockedAt !== undefined) lock.held((performance.now() - lockedAt) / 1000);
      throw this.#refused(e);
    }
    const t = newTransaction(this.#newestHash, lockedAt);
    this.#txn = t;
    // Every change already queued behind this one is computed (in microtasks) before this
    // runs: they all go in this transaction.
    setImmediate(() => {
      this.#lane.run(() => this.#commit(t)).catch(() => undefined);
    });
  }

  // Why the write lock could not be taken, as the service answers it.
  #refused(e: unknown): Error {
    const busy = this.#lock.busy(e, this.#settings.lockWaitMs);
    if (busy !== undefined) return busy;
    if (connectionLost(e)) this.#lost(e);
    if (this.#halted !== undefined) return new LogUnavailable(this.#halted);
    return new LogUnavailable(
      `the write lock could not be taken (${(e as Error).message}); nothing was written`,
    );
  }

  // Inserts the transaction's rows, notifies the other replicas and commits (releasing the
  // lock); on a failure rolls back to what is committed, and no row of it is acknowledged.
  async #commit(t: Transaction): Promise<void> {
    const c = this.#db.client;
    try {
      if (c === undefined || !this.#db.connected)
        throw new PegLimitsError('connection_lost', 'the database connection was lost');
      await c.query(commitStatement(c, t.rows));
    } catch (e) {
      await c?.query('ROLLBACK').catch(() => undefined);
      this.#lock.released(t);
      for (const r of t.rows) this.#positions.delete(r.state);
      this.#state = this.#committedState;
      this.#position = this.#committedPosition;
      this.#txn = undefined;
      if (connectionLost(e)) this.#lost(e);
      else if (t.rows.length > 0)
        this.#settings.log?.(`warning: a commit failed: ${(e as Error).message}`);
      t.reject(
        new LogUnavailable(
          `the change could not be committed (${(e as Error).message}); it was not acknowledged`,
        ),
      );
      return;
    }
    this.#lock.released(t);
    this.#committedState = this.#state;
    this.#committedPosition = this.#position;
    this.#txn = undefined;
    t.resolve();
    for (const r of t.rows)
      if (r.seq % this.#settings.snapshotEvery === 0)
        this.#snapshots
          .write(r.state, r.seq)
          .catch((e: unknown) =>
            this.#settings.log?.(`warning: snapshot ${r.seq} failed: ${(e as Error).message}`),
          );
  }

  #lost(e: unknown): void {
    if (this.#closing) return;
    const log = this.#settings.log;
    if (!connectionLost(e)) {
      log?.(`warning: ${(e as Error).message}`);
      return;
    }
    if (this.#db.connected)
      log?.(
        `warning: the database connection was lost (${(e as Error).message}); reads go on from position ${this.#position}, changes are refused until it is back`,
      );
    this.#db.lose();
  }

  // A database whose newest row is older than what this replica applied has lost commits
  // (a failover to a standby that did not have them): writing on would leave a gap in the
  // log and a state that no replica started from the database can have.
  async #checkNotBehind(client: pg.Client): Promise<void> {
    const newest = Number((await client.query(NEWEST_SEQ)).rows[0].newest);
    if (newest < this.#committedPosition)
      this.#halt(
        `the database's newest row is ${newest}, behind this replica's position ${this.#committedPosition} (commits it applied are not in the database, as after a failover to a standby that did not have them)`,
        'until it is restarted, to start from what the database holds',
      );
  }
}
