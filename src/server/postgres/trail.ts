/**
 * The audit trail on PostgreSQL: one row a record (`peg_limits_audit`: its position, its
 * hash, its line), written in its batch's transaction and never pruned; the check at
 * start-up that its newest records link up, and the trail read in pages. Node-only.
 */
import { LogUnavailable } from 'peg-limits';
import type pg from 'pg';
import { checkLink, readRecord } from '../record/index.js';
import { connectClient } from './connect.js';

/**
 * Whether the trail's newest two records link up (the whole chain is `audit verify`'s to
 * check): undefined when they do, else where and why not.
 */
export async function trailTail(
  client: pg.Client,
): Promise<{ position: number; why: string } | undefined> {
  const { rows } = await client.query(
    'SELECT seq, hash, record FROM peg_limits_audit ORDER BY seq DESC LIMIT 2',
  );
  const read = (row: { seq: unknown; hash: unknown; record: unknown }) => {
    const r = readRecord(String(row.record));
    if (!r.ok) return { why: r.why };
    if (r.record.position !== Number(row.seq) || r.record.hash !== row.hash)
      return { why: `the row's seq or hash is not its record's` };
    return { record: r.record };
  };
  const newest = rows[0];
  if (newest === undefined) return undefined;
  const last = read(newest);
  if (last.record === undefined) return { position: Number(newest.seq), why: last.why };
  const before = rows[1] === undefined ? undefined : read(rows[1]);
  if (before !== undefined && before.record === undefined)
    return { position: Number(rows[1].seq), why: before.why };
  const why = checkLink(
    last.record,
    before?.record === undefined
      ? undefined
      : { hash: before.record.hash, position: before.record.position },
  );
  return why === undefined ? undefined : { position: last.record.position, why };
}

// The newest audit record's hash (no row: the trail starts here).
/** Up to `limit` records of the trail after position `after`, on `c` (undefined: out of reach). */
export async function auditRows(
  c: pg.Client | undefined,
  after: number,
  limit: number,
): Promise<ReadonlyArray<string>> {
  if (c === undefined)
    throw new LogUnavailable('the database is out of reach: the audit trail cannot be read');
  const { rows } = await c.query(
    'SELECT record FROM peg_limits_audit WHERE seq > $1 ORDER BY seq LIMIT $2',
    [after, limit],
  );
  return rows.map((r) => String(r.record));
}

/** The query of the newest audit record's hash. */
export const NEWEST_RECORD = 'SELECT hash FROM peg_limits_audit ORDER BY seq DESC LIMIT 1';

/** The lines of the trail on PostgreSQL, in order, read a page at a time. */
export async function* storeTrail(
  url: string,
): AsyncGenerator<{ readonly text: string; readonly where: string; readonly expected?: number }> {
  const client = await connectClient(url);
  try {
    let after = 0;
    for (;;) {
      const { rows } = await client.query(
        'SELECT seq, record FROM peg_limits_audit WHERE seq > $1 ORDER BY seq LIMIT 10000',
        [after],
      );
      if (rows.length === 0) return;
      for (const row of rows) {
        after = Number(row.seq);
        yield { text: String(row.record), where: `row ${after}`, expected: after };
      }
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}

// Any fixed number: the first key of the advisory locks that lease a URL's delivery.
const ALERT_LEASE = 7_417_010;

/**
 * Alert cursors in the database (`peg_limits_alert_cursors`), and the lease that makes one
 * replica deliver each URL's alerts: a session-level advisory lock on a connection of the
 * cursors' own, held while it lives (a replica that dies lets it go with its connection).
 */
export function pgAlertCursors(url: string): {
  load(key: string): Promise<number | undefined>;
  save(key: string, position: number): Promise<void>;
  lead(key: string): Promise<boolean>;
  close(): Promise<void>;
} {
  let client: pg.Client | undefined;
  const held = new Set<string>();
  const connection = async () => {
    if (client !== undefined) return client;
    const c = await connectClient(url);
    c.on('error', () => {
      if (client === c) client = undefined;
      held.clear();
    });
    client = c;
    return c;
  };
  const query = async (text: string, values: unknown[]) => {
    const c = await connection();
    try {
      return await c.query(text, values);
    } catch (e) {
      // The connection went: the leases with it; the next call connects again.
      if (client === c) client = undefined;
      held.clear();
      await c.end().catch(() => undefined);
      throw e;
    }
  };
  return {
    async load(key) {
      const { rows } = await query('SELECT position FROM peg_limits_alert_cursors WHERE key = $1', [
        key,
      ]);
      return rows[0] === undefined ? undefined : Number(rows[0].position);
    },
    async save(key, position) {
      await query(
        'INSERT INTO peg_limits_alert_cursors (key, position) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET position = GREATEST(peg_limits_alert_cursors.position, EXCLUDED.position)',
        [key, position],
      );
    },
    async lead(key) {
      if (held.has(key)) return true;
      const { rows } = await query('SELECT pg_try_advisory_lock($1, hashtext($2)) AS got', [
        ALERT_LEASE,
        key,
      ]);
      if (rows[0]?.got === true) held.add(key);
      return held.has(key);
    },
    async close() {
      const c = client;
      client = undefined;
      held.clear();
      await c?.end().catch(() => undefined);
    },
  };
}
