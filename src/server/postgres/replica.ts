/**
 * One replica's view of the log on PostgreSQL (`openPgLog` opens it): the state in memory,
 * the rows it applies as the others commit them (woken by `LISTEN`, and by a short poll), and
 * the write transaction it opens under the write lock for the changes it takes (group
 * commit). Its connections and their reconnection are `replica-connection.ts`'s, the lock
 * and the transaction's rows `write-transaction.ts`'s, the snapshot rows it writes
 * `replica-snapshots.ts`'s. Node-only.
 */
import {
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
import { serialQueue } from '../../internal.js';
import { PgLogError } from './connect.js';
import { ReplicaConnection } from './replica-connection.js';
import { applyRowsAfter, ReplicaLedger } from './replica-ledger.js';
import { SnapshotWriter } from './replica-snapshots.js';
import {
  type BatchRow,
  behindReason,
  commitStatement,
  NotifiedRows,
  queueUsage,
  rowsOfNotification,
} from './rows.js';
import { connectionLost } from './tables.js';
import { auditRows } from './trail.js';
import {
  addRow,
  LockSpending,
  newTransaction,
  rollBackLocked,
  type Transaction,
  takeWriteLock,
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
  // Its state and position, what of them is committed, and who follows them.
  readonly #ledger: ReplicaLedger;
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
  // Set when a row cannot be read or applied here (a newer release may have written it), or
  // when the database turns out to be behind this replica: the replica keeps its state, takes
  // no writes and follows no further; said once. (At start-up the error itself is thrown.)
  #halted: string | undefined;
  #started = false;
  // What notifications carried until a catch-up takes it.
  readonly #notified = new NotifiedRows();
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
          `the database connection is back; catching up from position ${this.#ledger.position}`,
        );
        this.#follow();
      },
    });
    this.#snapshots = new SnapshotWriter(settings);
    this.#ledger = new ReplicaLedger(state, position);
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
      const note = await this.append([], this.#ledger.state, this.#ledger.state);
      await note.durable;
      this.#settings.log?.(
        `warning: the audit trail broke; --audit-repair started a new chain at position ${note.position}`,
      );
    }
  }

  get state(): LimitsState {
    return this.#ledger.state;
  }

  get position(): number {
    return this.#ledger.position;
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
    return this.#ledger.positionOf(state);
  }

  // Properties, not methods: callers take them off the log and call them alone.
  /**
   * Asked on the listening connection, which is idle between notifications (the other one
   * may be inside a write transaction); a scrape waits for it at most a second.
   */
  readonly notificationQueue = (): Promise<number | undefined> =>
    this.#db.connected ? queueUsage(this.#db.listener) : Promise.resolve(undefined);

  readonly audit = (after: number, limit: number): Promise<ReadonlyArray<string>> =>
    this.#lane.run(() => auditRows(this.#db.connected ? this.#db.client : undefined, after, limit));

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
      const ledger = this.#ledger;
      if (base !== ledger.state)
        throw new LogConflict(ledger.state, 'the log moved on before this change');
      const seq = ledger.position + 1;
      addRow(t, { seq, events, meta, base, next, repair: this.#repair });
      this.#repair = undefined;
      ledger.wrote(next, seq);
      return { position: seq, durable: t.done };
    });
  }

  follow(fn: (state: LimitsState, position: number) => void): () => void {
    return this.#ledger.follow(fn);
  }

  async catchUp(current: LimitsState): Promise<LimitsState | undefined> {
    // Takes the write lock, unless this replica holds it already: the change that follows
    // is computed on the newest state, and its append cannot collide.
    await this.#lane.run(async () => {
      if (this.#txn === undefined) await this.#begin();
    });
    const ledger = this.#ledger;
    if (current === ledger.state) return undefined;
    // Behind the newest, or a state whose write failed: go on from the newest.
    const at = ledger.positionOf(current);
    return at === undefined || at < ledger.position ? ledger.state : undefined;
  }

  async snapshot(): Promise<void> {
    if (!this.#db.connected) throw new LogUnavailable('the database is out of reach');
    await this.#snapshots.write(this.#ledger.committedState, this.#ledger.committedPosition);
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
    this.#halted = `${reason}: this replica keeps its state at position ${this.#ledger.position} and takes no writes ${until}`;
    if (this.#started) this.#settings.log?.(`warning: ${this.#halted}`);
  }

  // Applies the rows after its position (`first`: the answer of that query already); a row
  // that cannot be applied halts the replica.
  async #apply(first?: ReadonlyArray<BatchRow>): Promise<boolean> {
    const c = this.#db.client;
    if (c === undefined || !this.#db.connected || this.#halted !== undefined) return false;
    try {
      const moved = await applyRowsAfter(c, this.#ledger, first);
      this.#catching = false;
      return moved;
    } catch (e) {
      if (e instanceof PgLogError) this.#halt(e.message);
      throw e;
    }
  }

  #follow(rows?: ReadonlyArray<BatchRow>): void {
    if (this.#closing || !this.#db.connected) return;
    if (!this.#notified.add(rows)) return;
    this.#lane
      .run(() => {
        const { rows: got, query } = this.#notified.take(this.#ledger.position);
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
    const locked = await takeWriteLock(c, lock, lockWaitMs, this.#ledger.position).catch(
      (e: unknown) => Promise.reject(this.#refused(e)),
    );
    try {
      // What other replicas committed before it.
      await this.#apply(locked.rows);
    } catch (e) {
      await rollBackLocked(c, lock, locked.lockedAt);
      throw this.#refused(e);
    }
    // The transaction's records follow the newest one, read under the lock.
    const t = newTransaction(locked.newestHash, locked.lockedAt);
    this.#txn = t;
    // Every change already queued behind this one is computed (in microtasks) before this
    // runs: they all go in this transaction.
    setImmediate(() => {
      this.#lane.run(() => this.#commit(t)).catch(() => undefined);
    });
  }

  // Why the write lock could not be taken, as the service answers it.
  #refused(e: unknown): Error {
    if (connectionLost(e)) this.#lost(e);
    return this.#lock.refusal(e, this.#settings.lockWaitMs, this.#halted);
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
      this.#ledger.rolledBack(t.rows.map((r) => r.state));
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
    this.#ledger.committed();
    this.#txn = undefined;
    t.resolve();
    this.#snapshots.writeDue(t.rows, this.#settings.snapshotEvery);
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
        `warning: the database connection was lost (${(e as Error).message}); reads go on from position ${this.#ledger.position}, changes are refused until it is back`,
      );
    this.#db.lose();
  }

  // A database behind this replica has lost commits: writing on would leave a gap in the log
  // and a state that no replica started from the database can have.
  async #checkNotBehind(client: pg.Client): Promise<void> {
    const reason = await behindReason(client, this.#ledger.committedPosition);
    if (reason !== undefined)
      this.#halt(reason, 'until it is restarted, to start from what the database holds');
  }
}
