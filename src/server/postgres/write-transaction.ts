/**
 * A replica's write transaction on PostgreSQL: the advisory lock that makes one replica at a
 * time the writer, the statement that takes it and reads what others committed before, the
 * rows a transaction holds until its commit, and what the lock has cost (for the metrics).
 * `replica.ts` opens and commits it. Node-only.
 */
import {
  type BatchMeta,
  type LimitsEvent,
  type LimitsState,
  LogBusy,
  LogUnavailable,
  type WriteLockFigures,
} from 'peg-limits';
import type pg from 'pg';
import { encodeBatch } from '../../internal.js';
import { makeRecord, ZERO_HASH } from '../record/index.js';
import { type BatchRow, readAfter } from './rows.js';
import { NEWEST_RECORD } from './trail.js';

/** The key of the advisory lock a replica holds from catching up to committing its rows. */
export const WRITE_LOCK = 7_417_003;

/**
 * The write transaction: open from taking the lock until its commit settles. The rows
 * appended under it, with the state after each; `done` settles with the commit.
 */
export interface Transaction {
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

/** A transaction that holds no row yet, after the record whose hash is `hash`. */
export function newTransaction(hash: string, locked: number): Transaction {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const done = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  done.catch(() => undefined);
  return { rows: [], hash, locked, done, resolve, reject };
}

/** A batch a transaction takes, and where the trail stands. */
interface NewRow {
  readonly seq: number;
  readonly events: ReadonlyArray<LimitsEvent>;
  readonly meta: BatchMeta | undefined;
  readonly base: LimitsState;
  readonly next: LimitsState;
  /** Past a break (--audit-repair): its record starts a new chain that says where and why. */
  readonly repair: { after: number; reason: string } | undefined;
}

/** Adds a batch's row to the transaction, with its audit record after the newest. */
export function addRow(t: Transaction, row: NewRow): void {
  const { seq, events, meta, base, next, repair } = row;
  const record = makeRecord(
    repair === undefined ? t.hash : ZERO_HASH,
    seq,
    events,
    meta,
    { base, next },
    repair === undefined ? {} : { repair },
  );
  t.rows.push({
    seq,
    text: encodeBatch(events),
    state: next,
    record: record.line,
    hash: record.hash,
  });
  t.hash = record.hash;
}

/**
 * One round trip that opens a transaction: the lock (its wait bounded by lock_timeout,
 * SQLSTATE 55P03), then the rows after `position`, read by a statement of its own after the
 * lock was granted (read committed: it sees every row committed before), then the newest
 * audit record. Its results: the rows at index 3, the record at 4.
 */
function beginStatement(lockWaitMs: number, position: number): string {
  return `BEGIN; SET LOCAL lock_timeout = ${lockWaitMs}; SELECT pg_advisory_xact_lock(${WRITE_LOCK}); ${readAfter(position)}; ${NEWEST_RECORD}`;
}

/** What one replica has spent on the write lock. */
export class LockSpending {
  #figures = { transactions: 0, waitedSeconds: 0, heldSeconds: 0, timeouts: 0 };

  /** The figures so far, as the metrics read them. */
  get figures(): WriteLockFigures {
    return { ...this.#figures };
  }

  /** A transaction asks for the lock. */
  asked(): void {
    this.#figures.transactions++;
  }

  /** Seconds spent waiting for the lock. */
  waited(seconds: number): void {
    this.#figures.waitedSeconds += seconds;
  }

  /** Seconds the lock was held. */
  held(seconds: number): void {
    this.#figures.heldSeconds += seconds;
  }

  /** The lock went with the transaction's commit or rollback (counted before anyone is answered). */
  released(t: Transaction): void {
    this.held((performance.now() - t.locked) / 1000);
  }

  /**
   * Why the write lock could not be taken, as the service answers it: busy when its wait ran
   * out (SQLSTATE 55P03, counted), else unavailable (`halted`: why the replica takes no
   * writes, when it does not).
   */
  refusal(e: unknown, lockWaitMs: number, halted: string | undefined): LogBusy | LogUnavailable {
    if ((e as { code?: string }).code === '55P03') {
      this.#figures.timeouts++;
      return new LogBusy(
        `other replicas held the write lock for over ${lockWaitMs / 1000} s; try again`,
      );
    }
    return new LogUnavailable(
      halted ?? `the write lock could not be taken (${(e as Error).message}); nothing was written`,
    );
  }
}

/** The write lock, taken: the rows after the position, the newest record's hash, when it was had. */
interface Locked {
  readonly rows: ReadonlyArray<BatchRow>;
  readonly newestHash: string;
  readonly lockedAt: number;
}

/**
 * Opens a transaction on `c` and takes the write lock, waiting at most `lockWaitMs`, with the
 * rows after `position` and the newest record read in the same round trip; the wait counted
 * in `lock`. On a failure the transaction is rolled back and the error thrown on.
 */
export async function takeWriteLock(
  c: pg.Client,
  lock: LockSpending,
  lockWaitMs: number,
  position: number,
): Promise<Locked> {
  lock.asked();
  const asked = performance.now();
  try {
    const results = (await c.query(
      beginStatement(lockWaitMs, position),
    )) as unknown as pg.QueryResult[];
    const lockedAt = performance.now();
    lock.waited((lockedAt - asked) / 1000);
    return {
      rows: results[3]!.rows as BatchRow[],
      newestHash: (results[4]!.rows[0]?.hash as string | undefined) ?? ZERO_HASH,
      lockedAt,
    };
  } catch (e) {
    lock.waited((performance.now() - asked) / 1000);
    await c.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

/** Rolls back a transaction that holds the write lock since `lockedAt` (the time held counted). */
export async function rollBackLocked(c: pg.Client, lock: LockSpending, lockedAt: number) {
  await c.query('ROLLBACK').catch(() => undefined);
  lock.held((performance.now() - lockedAt) / 1000);
}
