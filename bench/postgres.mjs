// A PostgreSQL server of its own for a benchmark, in a temporary folder on a Unix socket
// (Debian's binaries; PG_BIN elsewhere). `initdb` refuses root: as root, the server runs as
// the postgres user. Exits the process with a message when the binaries are missing.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * Starts the server on `port`; resolves with its URL (database `postgres`), a function that
 * makes a fresh database and gives its URL, and one that stops the server and removes it.
 */
export async function startPostgres(port = 55_432) {
  const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';
  if (!existsSync(join(BIN, 'initdb'))) {
    console.error(`no PostgreSQL server binaries at ${BIN}: apt-get install postgresql`);
    process.exit(1);
  }
  const root = process.getuid?.() === 0;
  const run = (cmd, args) =>
    root
      ? execFileSync('runuser', ['-u', 'postgres', '--', join(BIN, cmd), ...args])
      : execFileSync(join(BIN, cmd), args);
  const dir = mkdtempSync(join(tmpdir(), 'peg-limits-pgbench-'));
  chmodSync(dir, 0o777);
  if (root) execFileSync('chown', ['postgres:postgres', dir]);
  run('initdb', ['-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '-E', 'UTF8']);
  run('pg_ctl', [
    '-D',
    join(dir, 'data'),
    '-o',
    `-k ${dir} -c listen_addresses='' -p ${port} ${process.env.PG_EXTRA ?? ''}`,
    '-l',
    join(dir, 'log'),
    '-w',
    'start',
  ]);
  const url = `postgres://postgres@localhost/postgres?host=${encodeURIComponent(dir)}&port=${port}`;
  return {
    url,
    async database(name) {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(`CREATE DATABASE ${name}`);
      await c.end();
      return url.replace('/postgres?', `/${name}?`);
    },
    stop() {
      try {
        run('pg_ctl', ['-D', join(dir, 'data'), '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
