/**
 * The audit trail on PostgreSQL: one row a record (`peg_limits_audit`: its position, its
 * hash, its line), written in its batch's transaction and never pruned; the check at
 * start-up that its newest records link up, and the trail read in pages. Node-only.
 */
import type pg from 'pg';
import { checkLink, readRecord } from './audit.js';
import { connectClient } from './pg-connect.js';

// Whether the trail's newest two records link up (the whole chain is `audit verify`'s to
// check): undefined when they do, else where and why not.
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
