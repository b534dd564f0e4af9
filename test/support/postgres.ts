/**
 * A private PostgreSQL server for the tests, from Debian's binaries: `initdb` in a temporary
 * folder, listening only on a Unix socket in that folder (no TCP port at all), stopped at
 * the end. `initdb` refuses to run as root, so as root it runs as the `postgres` user.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
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
  /** The port that names its socket file. */
  readonly port: number;
  /** The path of its Unix socket. */
  readonly socket: string;
  /** Stops the server (fast shutdown: connections are cut). */
  stop(): void;
  /** Crashes it: SIGKILL for its postmaster and every process of it, at once. */
  crash(): void;
  /** Starts it again on the same folder and socket. */
  start(): void;
  /** Stops it and removes its folder. */
  destroy(): void;
  /** Creates a fresh, empty database on it; resolves with its connection string. */
  database(): Promise<string>;
  /** The connection string of its database `name`. */
  urlOf(name: string): string;
}

/** A standby server that streams from a primary and can be promoted to one. */
export interface TestStandby extends TestPostgres {
  /** Promotes it: it leaves recovery and takes writes; returns once it does. */
  promote(): void;
}

let port = 54_000 + (process.pid % 900);

/** A fresh temporary folder that the server's user owns. */
function serverFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'peg-limits-pg-'));
  chmodSync(dir, 0o777);
  if (asRoot) execFileSync('chown', ['postgres:postgres', dir]);
  return dir;
}

/** The processes whose parent is `pid` (from `/proc`). */
function childrenOf(pid: number): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // The parent is the second field after the command name, which is in parentheses.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid)
        found.push(Number(name));
    } catch {
      // it ended while we looked
    }
  }
  return found;
}

/** Starts a server on the data folder `data` inside `dir`, with extra `-c` settings. */
function serve(dir: string, data: string, settings = ''): TestPostgres {
  // The port only names the socket file; nothing listens on TCP.
  const p = port++;
  const options = `-k ${dir} -c listen_addresses='' -p ${p} -c fsync=on -c max_connections=100 ${settings}`;
  const start = () =>
    run('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', 'start']);
  let crashed = false;
  const stop = () => {
    // A crashed server's pid file names processes that are gone: nothing to stop.
    if (crashed) return;
    try {
      run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
    } catch {
      // already stopped
    }
  };
  start();
  const url = `postgres://postgres@localhost/postgres?host=${encodeURIComponent(dir)}&port=${p}`;
  let databases = 0;
  const urlOf = (name: string) => url.replace('/postgres?', `/${name}?`);
  return {
    url,
    dir,
    port: p,
    socket: join(dir, `.s.PGSQL.${p}`),
    stop,
    crash() {
      crashed = true;
      const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      for (const pid of [postmaster, ...childrenOf(postmaster)]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // it had ended
        }
      }
    },
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
      return urlOf(name);
    },
    urlOf,
  };
}

/** Creates and starts a private server in a fresh temporary folder. */
export function startPostgres(): TestPostgres {
  const dir = serverFolder();
  const data = join(dir, 'data');
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  return serve(dir, data);
}

/**
 * Creates a standby of `primary` in a fresh temporary folder (`pg_basebackup -R`: it streams
 * the primary's WAL over its socket) and starts it. Once the primary sets
 * `synchronous_standby_names = '*'`, a commit there returns only once this standby has
 * flushed it.
 */
export function startStandby(primary: TestPostgres): TestStandby {
  const dir = serverFolder();
  const data = join(dir, 'data');
  const args = ['-h', primary.dir, '-p', String(primary.port), '-U', 'postgres'];
  run('pg_basebackup', [...args, '-D', data, '-R', '--checkpoint=fast', '--no-sync']);
  // A standby retries its WAL source every 5 s by default, and a promotion can wait that
  // long (measured: 5.1 s in about half the runs, 0.11 s in the others); with 200 ms,
  // 0.11-0.31 s in six runs out of six.
  const server = serve(dir, data, '-c wal_retrieve_retry_interval=200ms');
  return { ...server, promote: () => run('pg_ctl', ['-D', data, '-w', 'promote']) };
}

/**
 * A failover address, as a platform gives one: a TCP port on loopback that passes each
 * connection through to the Unix socket of the server it points at. `pointAt` cuts every
 * connection through it and sends new ones to another server.
 */
export interface FailoverAddress {
  /** `url` with its host and port replaced by this address. */
  urlOf(url: string): string;
  pointAt(socket: string): void;
  close(): Promise<void>;
}

/** Opens a failover address that points at `socket`. */
export async function failoverAddress(socket: string): Promise<FailoverAddress> {
  let target = socket;
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(target);
    for (const s of [client, upstream]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port: at } = server.address() as AddressInfo;
  return {
    urlOf(url) {
      const u = new URL(url);
      return `postgres://${u.username}@127.0.0.1:${at}${u.pathname}`;
    },
    pointAt(next) {
      target = next;
      for (const s of open) s.destroy();
    },
    close() {
      for (const s of open) s.destroy();
      return new Promise((r) => server.close(() => r()));
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
