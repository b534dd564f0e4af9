/**
 * A private PostgreSQL server for the tests, from Debian's binaries: `initdb` in a temporary
 * folder, listening only on a Unix socket in that folder (no TCP port at all), stopped at
 * the end. `initdb` refuses to run as root, so as root it runs as the `postgres` user.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { decodeJson } from '../../src/index.js';

const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** Whether the PostgreSQL server binaries are on this machine. */
export const POSTGRES_AVAILABLE =
  existsSync(join(BIN, 'initdb')) && existsSync(join(BIN, 'pg_ctl'));

/** Why the PostgreSQL tests skip, when they do. */
export const POSTGRES_MISSING = `no PostgreSQL server binaries at ${BIN} (apt-get install postgresql, or set PG_BIN)`;

const asRoot = process.getuid?.() === 0;

function run(command: string, args: string[]): string {
  const file = join(BIN, command);
  return asRoot
    ? execFileSync('runuser', ['-u', 'postgres', '--', file, ...args], { encoding: 'utf8' })
    : execFileSync(file, args, { encoding: 'utf8' });
}

/** A running private server. */
export interface TestPostgres {
  /** A connection string for the `pg` client (Unix socket in `dir`). */
  readonly url: string;
  readonly dir: string;
  /** Stops the server (fast shutdown: connections are cut). */
  stop(): void;
  /** Starts it again on the same folder and socket. */
  start(): void;
  /** Stops it and removes its folder. */
  destroy(): void;
  /** Creates a fresh, empty database on it; resolves with its connection string. */
  database(): Promise<string>;
}

let port = 54_000 + (process.pid % 900);

/** Creates and starts a private server in a fresh temporary folder. */
export function startPostgres(): TestPostgres {
  const dir = mkdtempSync(join(tmpdir(), 'peg-limits-pg-'));
  chmodSync(dir, 0o777);
  if (asRoot) execFileSync('chown', ['postgres:postgres', dir]);
  const data = join(dir, 'data');
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  // The port only names the socket file; nothing listens on TCP.
  const p = port++;
  const options = `-k ${dir} -c listen_addresses='' -p ${p} -c fsync=on -c max_connections=100`;
  const start = () =>
    run('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', 'start']);
  const stop = () => {
    try {
      run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
    } catch {
      // already stopped
    }
  };
  start();
  const url = `postgres://postgres@localhost/postgres?host=${encodeURIComponent(dir)}&port=${p}`;
  let databases = 0;
  return {
    url,
    dir,
    stop,
    start,
    destroy() {
      stop();
      rmSync(dir, { recursive: true, force: true });
    },
    async database() {
      const name = `t${databases++}`;
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(`CREATE DATABASE ${name}`);
      await c.end();
      return url.replace('/postgres?', `/${name}?`);
    },
  };
}

/** Every withdrawal id in the log at `url`, with how many times it appears. */
export async function loggedWithdrawals(url: string): Promise<Map<string, number>> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const { rows } = await c.query('SELECT events FROM peg_limits_batches ORDER BY seq');
  await c.end();
  const ids = new Map<string, number>();
  for (const row of rows)
    for (const e of decodeJson(row.events) as Array<{ type: string; id?: string }>)
      if (e.type === 'withdrawalRequested') ids.set(e.id!, (ids.get(e.id!) ?? 0) + 1);
  return ids;
}
