/**
 * The connection to PostgreSQL, with the `pg` driver loaded only when used, and the error
 * of a database that cannot be used. A connection string may name several servers and ask
 * for the one that takes writes, as libpq reads it (`pg` reads one host only): each is
 * tried in turn. Node-only.
 */
import { PegLimitsError } from 'peg-limits';

import type pg from 'pg';
import { loadPeer } from '../ops/index.js';

/** A database that cannot be used: the message says why. */
export class PgLogError extends PegLimitsError {
  override readonly name = 'PgLogError';

  constructor(message?: string, options?: { readonly cause?: unknown }) {
    super('store_unavailable', message, options);
  }
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

/**
 * Connects to the first server `url` names that is of the kind it asks for
 * (`target_session_attrs`: a server whose sessions take writes, or one not in recovery),
 * trying them in order, as libpq does.
 *
 * @throws the connection's own error when `url` names one server and asks for any kind;
 *   else a PgLogError naming each server and why it was passed over
 */
export async function connectClient(url: string): Promise<pg.Client> {
  const { urls, names, wants } = serversOf(url);
  if (urls.length === 1 && wants === 'any') return connectOne(urls[0]!);
  const passed: string[] = [];
  for (const [i, one] of urls.entries()) {
    let client: pg.Client;
    try {
      client = await connectOne(one);
    } catch (e) {
      passed.push(`${names[i]}: ${(e as Error).message}`);
      continue;
    }
    try {
      const why = await notWanted(client, wants);
      if (why === undefined) return client;
      passed.push(`${names[i]}: ${why}`);
    } catch (e) {
      passed.push(`${names[i]}: ${(e as Error).message}`);
    }
    await client.end().catch(() => undefined);
  }
  throw new PgLogError(`no server takes the connection (${wants}): ${passed.join('; ')}`);
}

/** Why a server's session is not of the kind wanted, or `undefined` when it is. */
async function notWanted(client: pg.Client, wants: SessionWanted): Promise<string | undefined> {
  if (wants === 'read-write') {
    const { rows } = await client.query('SHOW transaction_read_only');
    return rows[0].transaction_read_only === 'on' ? 'read-only (a standby?)' : undefined;
  }
  if (wants === 'primary') {
    const { rows } = await client.query('SELECT pg_is_in_recovery() AS standby');
    return rows[0].standby === true ? 'a standby (in recovery)' : undefined;
  }
  return undefined;
}

async function connectOne(url: string): Promise<pg.Client> {
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

/** The kind of server a connection must reach (`target_session_attrs`; default `any`). */
type SessionWanted = 'any' | 'read-write' | 'primary';

/** What a connection string asks for: one connection string per server, in order. */
interface PgServers {
  /** One connection string per server, each naming that server only, in the order given. */
  readonly urls: readonly string[];
  /** Each server's host (and port), for messages: no user or password. */
  readonly names: readonly string[];
  readonly wants: SessionWanted;
}

const WANTED: ReadonlySet<string> = new Set(['any', 'read-write', 'primary']);

/**
 * Splits `url` into one connection string per server. The servers are a list in the host
 * part (`postgres://u@db1:5432,db2:5432/limits`) or, for Unix sockets, in the `host` and
 * `port` parameters (`?host=/run/a,/run/b&port=5432,5433`; one port is every server's).
 * `target_session_attrs` (`any`, `read-write` or `primary`) is taken out of each.
 * A string with one server and no `target_session_attrs` comes back as it was.
 *
 * @throws PgLogError for a `target_session_attrs` this release does not know, or `host`
 *   and `port` lists of different lengths
 */
export function serversOf(url: string): PgServers {
  const m = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)([^?#]*)(?:\?([^#]*))?(#.*)?$/i.exec(url);
  if (m === null) return { urls: [url], names: ['the database'], wants: 'any' };
  const [, scheme, authority, path, query, fragment] = m as unknown as string[];
  const at = authority!.lastIndexOf('@');
  const user = authority!.slice(0, at + 1);
  const hosts = authority!.slice(at + 1);
  const params = new URLSearchParams(query ?? '');
  const wants = params.get('target_session_attrs') ?? 'any';
  if (!WANTED.has(wants))
    throw new PgLogError(
      `target_session_attrs=${wants} is not supported here: use any, read-write or primary`,
    );
  const kind = wants as SessionWanted;
  const given = params.has('target_session_attrs');
  params.delete('target_session_attrs');
  const rebuild = (host: string, p: URLSearchParams) => {
    const q = p.toString();
    return `${scheme}${user}${host}${path}${q === '' ? '' : `?${q}`}${fragment ?? ''}`;
  };
  const socketHosts = params.get('host')?.split(',') ?? [];
  if (!hosts.includes(',') && socketHosts.length <= 1)
    return {
      urls: [given ? rebuild(hosts, params) : url],
      names: [hosts === '' ? (params.get('host') ?? 'localhost') : hosts],
      wants: kind,
    };
  if (hosts.includes(',')) {
    const list = hosts.split(',');
    return {
      urls: list.map((h) => rebuild(h, params)),
      names: list,
      wants: kind,
    };
  }
  const ports = params.get('port')?.split(',') ?? [];
  if (ports.length > 1 && ports.length !== socketHosts.length)
    throw new PgLogError(
      `${socketHosts.length} hosts but ${ports.length} ports: give one port, or one for each host`,
    );
  const urls: string[] = [];
  const names: string[] = [];
  socketHosts.forEach((host, i) => {
    const p = new URLSearchParams(params);
    p.set('host', host);
    const port = ports.length > 1 ? ports[i] : ports[0];
    if (port !== undefined) p.set('port', port);
    urls.push(rebuild(hosts, p));
    names.push(port === undefined ? host : `${host}:${port}`);
  });
  return { urls, names, wants: kind };
}
