/**
 * The connection to PostgreSQL, with the `pg` driver loaded only when used, and the error
 * of a database that cannot be used. Node-only.
 */

import type pg from 'pg';
import { loadPeer } from './peers.js';

/** A database that cannot be used: the message says why. */
export class PgLogError extends Error {
  override readonly name = 'PgLogError';
}

/**
 * The `pg` driver, loaded when a log on PostgreSQL is first opened: it is an optional peer
 * dependency, so a page or a signer that only wants the core never installs it.
 *
 * @throws PgLogError naming the package when it is not installed
 */
function loadPg(): Promise<typeof pg> {
  return loadPeer<typeof pg>(
    'pg',
    () => import('pg'),
    (hint) => new PgLogError(`the log on PostgreSQL needs ${hint}`),
  );
}

export async function connectClient(url: string): Promise<pg.Client> {
  const { Client } = await loadPg();
  // Named for the process, so that an operator (and a test) can see in `pg_stat_activity`
  // and `pg_locks` which replica holds the write lock; a name in the URL comes first.
  const client = new Client({
    connectionString: url,
    application_name: `peg-limits ${process.pid}`,
  });
  // Until the caller wires its own handler, a lost connection must not crash the process.
  client.on('error', () => undefined);
  await client.connect();
  return client;
}
