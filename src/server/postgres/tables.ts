/**
 * The tables of the event log on PostgreSQL (docs/replicas.md): the schema and its version, the
 * snapshot rows written and read in parts, and the move of a data folder into an empty
 * database. The connection is `connect.ts`; the log itself, its write lock and its
 * followers, is `pg-log.ts`. Node-only.
 */

import {
  decodeJson,
  encodeJson,
  type LimitsEvent,
  type LimitsState,
  stateFromSnapshot,
} from 'peg-limits';
import type pg from 'pg';
import { decodeBatch, located, snapshotParts } from '../../internal.js';
import { connectClient, PgLogError } from './connect.js';

/** The schema version this release creates and reads. */
export const PG_SCHEMA_VERSION = 3;
/** Batches between two snapshot rows, unless configured. */
export const DEFAULT_PG_SNAPSHOT_EVERY = 1000;
/** Batch rows kept behind the newest snapshot, unless configured. */
export const DEFAULT_KEEP_BATCHES = 10_000;

/** The channel replicas `NOTIFY` new rows on. */
export const CHANNEL = 'peg_limits';
// The key of the advisory lock a snapshot is written under, so that two replicas never
// write parts of the same snapshot.
const SNAPSHOT_LOCK = 7_417_002;
/** Withdrawals or entries in one part row of a snapshot, unless configured. */
export const DEFAULT_SNAPSHOT_SLICE = 2_000;
// Any fixed number: the key of the advisory lock that serialises schema creation.
const SCHEMA_LOCK = 7_417_001;

/**
 * The schema, created once, idempotently, under an advisory lock so that replicas starting
 * together do not race.
 */
export async function ensureSchema(client: pg.Client): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
    await client.query(
      'CREATE TABLE IF NOT EXISTS peg_limits_meta (key text PRIMARY KEY, value text NOT NULL)',
    );
    await client.query(
      'CREATE TABLE IF NOT EXISTS peg_limits_batches (seq bigint PRIMARY KEY, events text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())',
    );
    await client.query(
      'CREATE TABLE IF NOT EXISTS peg_limits_snapshots (seq bigint PRIMARY KEY, snapshot text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())',
    );
    // Version 2: a snapshot row holds the head, and its entries and withdrawals are part
    // rows of a slice each (a version 1 row, with no parts, holds the whole snapshot).
    await client.query(
      'ALTER TABLE peg_limits_snapshots ADD COLUMN IF NOT EXISTS parts integer NOT NULL DEFAULT 0',
    );
    await client.query(
      'CREATE TABLE IF NOT EXISTS peg_limits_snapshot_parts (seq bigint NOT NULL, part integer NOT NULL, body text NOT NULL, PRIMARY KEY (seq, part))',
    );
    // Version 3: the audit trail, one record per batch, written in the batch's transaction
    // and never pruned.
    await client.query(
      'CREATE TABLE IF NOT EXISTS peg_limits_audit (seq bigint PRIMARY KEY, hash text NOT NULL, record text NOT NULL)',
    );
    // Where each alert URL's delivery stands (by a hash of the URL: no URL is written down).
    await client.query(
      'CREATE TABLE IF NOT EXISTS peg_limits_alert_cursors (key text PRIMARY KEY, position bigint NOT NULL)',
    );
    await client.query(
      "INSERT INTO peg_limits_meta (key, value) VALUES ('schema', $1) ON CONFLICT (key) DO NOTHING",
      [String(PG_SCHEMA_VERSION)],
    );
    await client.query(
      "UPDATE peg_limits_meta SET value = $1 WHERE key = 'schema' AND value IN ('1', '2')",
      [String(PG_SCHEMA_VERSION)],
    );
    const { rows } = await client.query("SELECT value FROM peg_limits_meta WHERE key = 'schema'");
    if (rows[0]?.value !== String(PG_SCHEMA_VERSION)) {
      throw new PgLogError(
        `the database holds schema version ${rows[0]?.value}; this release reads version ${PG_SCHEMA_VERSION}`,
      );
    }
    await client.query('COMMIT');
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

/** Whether an error means the connection to the database is gone (rather than a query refused). */
export function connectionLost(e: unknown): boolean {
  const code = (e as { code?: string }).code ?? '';
  const message = (e as Error).message ?? '';
  return (
    code.startsWith('08') ||
    code === '57P01' ||
    code === 'ECONNREFUSED' ||
    code === 'ENOENT' ||
    code === 'ECONNRESET' ||
    /terminat|not queryable|Connection terminated|closed/i.test(message)
  );
}

/** A batch row's events; throws PgLogError when the row cannot be read. */
export function parseBatch(text: string, seq: number): ReadonlyArray<LimitsEvent> {
  const batch = decodeBatch(text);
  if (!batch.ok) throw new PgLogError(`batch ${seq} cannot be read: ${batch.error}`);
  return batch.events;
}

/**
 * Reads snapshot `seq` into a state: a version 1 row whole, a version 2 row from its head and
 * its part rows, read a few at a time (never the whole snapshot as one string).
 */
export async function loadSnapshot(
  client: pg.Client,
  row: { seq: unknown; snapshot: unknown; parts: unknown },
): Promise<LimitsState> {
  const seq = Number(row.seq);
  const damaged = (why: string): never => {
    throw new PgLogError(`snapshot ${seq} is damaged: ${why}`);
  };
  const parts = Number(row.parts ?? 0);
  const text = decodeJson(row.snapshot as string) as { head?: Record<string, unknown> };
  let value: unknown;
  // A version 1 row is the whole snapshot; a version 2 row is `{"head":…}` and its parts.
  if (typeof text !== 'object' || text === null || text.head === undefined) value = text;
  else {
    const head = text.head;
    const accountCaps: Record<string, unknown> = Object.create(null);
    const withdrawals: unknown[] = [];
    for (let from = 0; from < parts; from += 16) {
      const { rows } = await client.query(
        'SELECT part, body FROM peg_limits_snapshot_parts WHERE seq = $1 AND part >= $2 AND part < $3 ORDER BY part',
        [seq, from, Math.min(parts, from + 16)],
      );
      if (rows.length !== Math.min(16, parts - from)) damaged(`part rows from ${from} are missing`);
      for (const r of rows) {
        const part = decodeJson(r.body as string) as {
          accountCaps?: Record<string, unknown>;
          withdrawals?: unknown[];
        };
        if (part.accountCaps !== undefined) Object.assign(accountCaps, part.accountCaps);
        else if (Array.isArray(part.withdrawals))
          for (const w of part.withdrawals) withdrawals.push(w);
        else damaged(`part ${r.part} holds neither entries nor withdrawals`);
      }
    }
    value = { ...head, accountCaps, withdrawals };
  }
  const r = stateFromSnapshot(value);
  if (!r.ok) damaged(`invalid snapshot: ${located(r.error)}`);
  return (r as { state: LimitsState }).state;
}

/** The newest snapshot past `position`, loaded, or `undefined` when there is none. */
export async function newerSnapshot(
  c: pg.Client,
  position: number,
): Promise<{ state: LimitsState; position: number } | undefined> {
  const snap = await c.query(
    'SELECT seq, snapshot, parts FROM peg_limits_snapshots WHERE seq > $1 ORDER BY seq DESC LIMIT 1',
    [position],
  );
  if (snap.rows.length === 0) return undefined;
  return { state: await loadSnapshot(c, snap.rows[0]), position: Number(snap.rows[0].seq) };
}

/**
 * Writes the snapshot of `state` at `seq` as a head row and part rows of `slice` entries or
 * withdrawals each, in one transaction on `client` (the head row last, so a snapshot row
 * is always whole), unless a snapshot at `seq` is there already. Each part is one query,
 * so the event loop is free between slices. Returns the bytes written.
 */
export async function writeSnapshotRows(
  client: pg.Client,
  seq: number,
  state: LimitsState,
  slice: number,
  ownTransaction = true,
): Promise<number> {
  if (ownTransaction) await client.query('BEGIN');
  try {
    if (ownTransaction) await client.query('SELECT pg_advisory_xact_lock($1)', [SNAPSHOT_LOCK]);
    const there = await client.query('SELECT 1 FROM peg_limits_snapshots WHERE seq = $1', [seq]);
    if (there.rows.length > 0) {
      if (ownTransaction) await client.query('ROLLBACK');
      return 0;
    }
    // Leftovers of a writer that died are no snapshot: start clean.
    await client.query('DELETE FROM peg_limits_snapshot_parts WHERE seq = $1', [seq]);
    const parts = snapshotParts(state);
    let part = 0;
    let bytes = 0;
    const put = async (body: string) => {
      await client.query(
        'INSERT INTO peg_limits_snapshot_parts (seq, part, body) VALUES ($1, $2, $3)',
        [seq, part++, body],
      );
      bytes += body.length;
    };
    for (let c = parts.nextEntries(slice); c !== undefined; c = parts.nextEntries(slice))
      if (Object.keys(c).length > 0) await put(encodeJson({ accountCaps: c }));
    for (let w = parts.nextWithdrawals(slice); w !== undefined; w = parts.nextWithdrawals(slice))
      if (w.length > 0) await put(encodeJson({ withdrawals: w }));
    const head = encodeJson({ head: parts.head });
    await client.query(
      'INSERT INTO peg_limits_snapshots (seq, snapshot, parts) VALUES ($1, $2, $3)',
      [seq, head, part],
    );
    if (ownTransaction) await client.query('COMMIT');
    return bytes + head.length;
  } catch (e) {
    if (ownTransaction) await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

/**
 * Moves an embedded data folder's state into an empty database: its snapshot, at the
 * folder's batch count, so positions go on from there.
 *
 * @throws PgLogError when the database already holds batches or snapshots
 */
export async function migrateToPg(
  url: string,
  state: LimitsState,
  seq: number,
): Promise<{ readonly seq: number; readonly bytes: number }> {
  const client = await connectClient(url);
  try {
    await ensureSchema(client);
    await client.query('BEGIN');
    await client.query(
      'LOCK TABLE peg_limits_batches, peg_limits_snapshots, peg_limits_snapshot_parts IN EXCLUSIVE MODE',
    );
    const { rows } = await client.query(
      'SELECT (SELECT count(*) FROM peg_limits_batches) AS batches, (SELECT count(*) FROM peg_limits_snapshots) AS snapshots',
    );
    if (Number(rows[0].batches) > 0 || Number(rows[0].snapshots) > 0) {
      throw new PgLogError(
        `the database is not empty (${rows[0].batches} batches, ${rows[0].snapshots} snapshots); migrate into an empty one`,
      );
    }
    // In the transaction that found the tables empty and holds them.
    const bytes = await writeSnapshotRows(client, seq, state, DEFAULT_SNAPSHOT_SLICE, false);
    await client.query('COMMIT');
    return { seq, bytes };
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    await client.end();
  }
}
