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

import type { EventLog, LimitsState } from 'peg-limits';
import type pg from 'pg';
import { redactStore } from '../ops/index.js';
import { connectClient, PgLogError, serversOf } from './connect.js';
import { PgReplica } from './replica.js';
import {
  DEFAULT_KEEP_BATCHES,
  DEFAULT_PG_SNAPSHOT_EVERY,
  DEFAULT_SNAPSHOT_SLICE,
  ensureSchema,
  loadSnapshot,
  writeSnapshotRows,
} from './tables.js';
import { trailTail } from './trail.js';

export { PgLogError } from './connect.js';
export { WRITE_LOCK } from './replica.js';
export {
  DEFAULT_KEEP_BATCHES,
  DEFAULT_PG_SNAPSHOT_EVERY,
  migrateToPg,
  PG_SCHEMA_VERSION,
} from './tables.js';

/** How long a write waits for other replicas to release the write lock, unless configured. */
const DEFAULT_LOCK_WAIT_MS = 2_000;

/** Options of {@link openPgLog}. */
export interface PgLogOptions {
  /** A PostgreSQL connection string (`postgres://user@host/db`). */
  readonly url: string;
  /** The state of an empty database (from the configuration); written as snapshot 0. */
  readonly initial: LimitsState;
  /** Batches between two snapshot rows (default 1000). */
  readonly snapshotEveryBatches?: number | undefined;
  /**
   * The old name of `snapshotEveryBatches`.
   *
   * @deprecated Use `snapshotEveryBatches`: elsewhere (`openDataLog`) `snapshotEvery` counts
   * events, here it counted batches. Still taken when `snapshotEveryBatches` is not given.
   */
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
  const { url } = options;
  const slice = options.snapshotSlice ?? DEFAULT_SNAPSHOT_SLICE;
  const client = await connectWithin(url, options.connectTimeoutMs ?? 15_000);
  await ensureSchema(client);
  const any = await client.query('SELECT 1 FROM peg_limits_snapshots LIMIT 1');
  if (any.rows.length === 0) await writeSnapshotRows(client, 0, options.initial, slice);
  const newest = await client.query(
    'SELECT seq, snapshot, parts FROM peg_limits_snapshots ORDER BY seq DESC LIMIT 1',
  );
  const replica = new PgReplica(
    {
      url,
      snapshotEvery:
        options.snapshotEveryBatches ?? options.snapshotEvery ?? DEFAULT_PG_SNAPSHOT_EVERY,
      keepBatches: options.keepBatches ?? DEFAULT_KEEP_BATCHES,
      slice,
      lockWaitMs: Math.max(1, Math.round(options.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS)),
      log: options.logLine,
    },
    client,
    await loadSnapshot(client, newest.rows[0]),
    Number(newest.rows[0].seq),
  );
  // The audit trail's newest records link up, or (--audit-repair) the next record starts a
  // new chain that says where and why it broke.
  await replica.start(options.pollMs ?? 200, async (c) => {
    const broken = await trailTail(c);
    if (broken === undefined) return undefined;
    if (options.auditRepair !== true)
      throw new PgLogError(
        `the audit trail breaks at position ${broken.position}: ${broken.why}; refusing to start (peg-limits audit verify --store … checks the whole trail; --audit-repair starts a new chain that records the break)`,
      );
    return { after: broken.position - 1, reason: broken.why };
  });
  return replica;
}

// Start-up waits for the database for a while (it may be starting too); a connection string
// this release cannot read fails at once.
async function connectWithin(url: string, ms: number): Promise<pg.Client> {
  serversOf(url);
  const until = Date.now() + ms;
  for (;;) {
    try {
      return await connectClient(url);
    } catch (e) {
      if (Date.now() > until)
        throw new PgLogError(
          `cannot reach the database at ${redactStore(url)}: ${(e as Error).message}`,
        );
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
