/**
 * What travels between replicas on PostgreSQL: the batch rows as read back, the query that
 * reads those after a position, the statement that commits a transaction's rows with their
 * audit records, and a commit's notification, which carries its rows when they fit (and the
 * queue of notifications the database keeps). Node-only.
 */
import type pg from 'pg';
import { CHANNEL } from './tables.js';

/** The newest position the database holds: its newest row, or its newest snapshot's. */
const NEWEST_SEQ =
  'SELECT GREATEST((SELECT max(seq) FROM peg_limits_batches), (SELECT max(seq) FROM peg_limits_snapshots)) AS newest';

/** A row of the batches table as read back. */
export interface BatchRow {
  readonly seq: string;
  readonly events: string;
}

/** Rows read per query while catching up. */
export const READ_ROWS = 5_000;
/**
 * The query that reads the rows after `position` (an integer, written in the text so that it
 * can run in a simple query beside other statements).
 */
export const readAfter = (position: number) =>
  `SELECT seq, events FROM peg_limits_batches WHERE seq > ${position} ORDER BY seq LIMIT ${READ_ROWS}`;

// What a commit's notification says: its rows (the first `seq`, then each row's text, one
// a line) when they fit in a notification, else only the newest position, and the others
// read them. A row's text is compact JSON, without a line break.
const NOTIFY_BYTES = 7_900;
function announcement(rows: ReadonlyArray<{ seq: number; text: string }>): string {
  const last = rows[rows.length - 1]!.seq;
  let bytes = 0;
  for (const r of rows) {
    bytes += Buffer.byteLength(r.text) + 1;
    if (bytes > NOTIFY_BYTES || r.text.includes('\n')) return `${last}`;
  }
  return `${rows[0]!.seq}\n${rows.map((r) => r.text).join('\n')}`;
}

/**
 * The rows a notification carries, or undefined when it names a position only (as every
 * notification of a release before this one does).
 */
export function rowsOfNotification(payload: string | undefined): BatchRow[] | undefined {
  if (payload === undefined) return undefined;
  const lines = payload.split('\n');
  const first = Number(lines[0]);
  if (lines.length < 2 || !Number.isSafeInteger(first)) return undefined;
  return lines.slice(1).map((events, i) => ({ seq: String(first + i), events }));
}

// Whether `rows` (none, or some) are the rows right after `position`, in order, without a gap.
function rowsFollowOn(rows: ReadonlyArray<BatchRow>, position: number): boolean {
  return rows.every((r, i) => Number(r.seq) === position + 1 + i);
}

/**
 * The rows the notifications carried since a catch-up last took them, and whether it must
 * query instead: a notification that named a position only (or the poll, or a
 * reconnection), or more rows than one query reads.
 */
export class NotifiedRows {
  #rows: BatchRow[] = [];
  #mustQuery = false;
  // A catch-up waits its turn already: the notifications until then are served by it (one
  // query for any number of them, or none when each carried its rows and those follow on
  // from the replica's position without a gap).
  #queued = false;

  /**
   * A notification's rows (`undefined` asks for a query): true when a catch-up is to be
   * queued, false when one waits its turn already and will take them.
   */
  add(rows: ReadonlyArray<BatchRow> | undefined): boolean {
    if (rows === undefined || this.#rows.length + rows.length > READ_ROWS) {
      this.#mustQuery = true;
      this.#rows = [];
    } else this.#rows.push(...rows);
    if (this.#queued) return false;
    this.#queued = true;
    return true;
  }

  /**
   * Takes what was carried: the rows after `position`, and whether to query rather than
   * apply them (asked for, or they do not follow on from `position` without a gap).
   */
  take(position: number): { rows: BatchRow[]; query: boolean } {
    const rows = this.#rows.filter((r) => Number(r.seq) > position);
    const query = this.#mustQuery || !rowsFollowOn(rows, position);
    this.#rows = [];
    this.#mustQuery = false;
    this.#queued = false;
    return { rows, query };
  }
}

/**
 * The statement that commits a write transaction in one round trip: its rows (as literals:
 * a simple query takes no parameters), each batch's audit record beside it (no batch
 * without its record), the notification, the commit.
 */
export function commitStatement(
  c: pg.Client,
  rows: ReadonlyArray<{ seq: number; text: string; hash: string; record: string }>,
): string {
  if (rows.length === 0) return 'COMMIT';
  const values = rows.map((r) => `(${r.seq}, ${c.escapeLiteral(r.text)})`).join(', ');
  const records = rows
    .map((r) => `(${r.seq}, '${r.hash}', ${c.escapeLiteral(r.record)})`)
    .join(', ');
  return `INSERT INTO peg_limits_batches (seq, events) VALUES ${values}; INSERT INTO peg_limits_audit (seq, hash, record) VALUES ${records}; NOTIFY ${CHANNEL}, ${c.escapeLiteral(announcement(rows))}; COMMIT`;
}

/**
 * The share (0 to 1) of the database's queue of notifications in use, asked on the
 * listening connection (idle between notifications); undefined when it cannot be read
 * within a second.
 */
export async function queueUsage(listener: pg.Client | undefined): Promise<number | undefined> {
  if (listener === undefined) return undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const r = await Promise.race([
      listener.query('SELECT pg_notification_queue_usage() AS usage'),
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), 1_000);
      }),
    ]);
    return r === undefined ? undefined : Number(r.rows[0].usage);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Why a replica at `committed` must take no writes when the database's newest row is
 * behind it (commits it applied are not in the database, as after a failover to a standby
 * that did not have them); `undefined` when it is not behind.
 */
export async function behindReason(
  client: pg.Client,
  committed: number,
): Promise<string | undefined> {
  const newest = Number((await client.query(NEWEST_SEQ)).rows[0].newest);
  return newest < committed
    ? `the database's newest row is ${newest}, behind this replica's position ${committed} (commits it applied are not in the database, as after a failover to a standby that did not have them)`
    : undefined;
}
