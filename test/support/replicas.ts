/**
 * Replicas over one private PostgreSQL, for the replica tests: `useReplicas()` starts the
 * server before a file's tests and stops it (with every replica the tests started) after
 * them, and gives the helpers the tests share: replicas in this process and in processes of
 * their own, writes, write storms, and the checks that every replica and the trail agree.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect } from 'vitest';
import { createLimitsState, decodeJson, encodeJson, type LimitsState } from '../../src/index.js';
import { type RunningServer, startServer } from '../../src/server/node-http/serve.js';
import { openPgLog, type PgLogOptions, WRITE_LOCK } from '../../src/server/postgres/pg-log.js';
import { pgAlertCursors } from '../../src/server/postgres/trail.js';
import { loggedWithdrawals, startPostgres, type TestPostgres } from './postgres.js';
import { CLI, killGroup, type Proc, runToEnd, startServe } from './proc.js';
import { TOKEN } from './tokens.js';

export const CAP = 10n ** 15n;

/** The state an empty database starts from: a window of 144 blocks, capped at `CAP`. */
export const initial = (): LimitsState =>
  createLimitsState({ limits: { rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: CAP } });

/** A withdrawal of 1 at height 100 by account `a`. */
export const withdrawal = (id: string) => ({
  type: 'withdrawalRequested',
  id,
  account: 'a',
  amount: 1n,
  height: 100,
});

/** `POST /admin/events` as the admin; the status, the body and the position answered. */
export async function post(base: string, events: unknown) {
  const r = await fetch(`${base}/admin/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: encodeJson(events),
  });
  return {
    status: r.status,
    body: await r.text(),
    position: r.headers.get('peg-limits-position'),
  };
}

/** Writers that spread single withdrawals over `nodes` until stopped; `acked` gets the 200s. */
export function writeStorm(nodes: Proc[], acked: Set<string>, tag: string, writers = 6) {
  let stop = false;
  let k = 0;
  const writer = async (w: number) => {
    while (!stop) {
      const id = `${tag}-${w}-${k++}`;
      try {
        const r = await post(nodes[(w + k) % nodes.length]!.url, {
          type: 'withdrawalRequested',
          id,
          account: 'x',
          amount: 3n,
          height: 100,
        });
        if (r.status === 200) acked.add(id);
      } catch {
        // that replica is down: the next request goes to another
      }
    }
  };
  const running = Promise.all(Array.from({ length: writers }, (_, w) => writer(w)));
  return async () => {
    stop = true;
    await running;
  };
}

/** Every batch has its audit record and every record its batch, and the chain links up. */
export async function trailAgrees(url: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const { rows } = await c.query(
      'SELECT (SELECT count(*)::int FROM peg_limits_batches b WHERE NOT EXISTS (SELECT 1 FROM peg_limits_audit a WHERE a.seq = b.seq)) AS bare, (SELECT count(*)::int FROM peg_limits_audit a WHERE NOT EXISTS (SELECT 1 FROM peg_limits_batches b WHERE b.seq = a.seq)) AS orphans, (SELECT count(*)::int FROM peg_limits_audit) AS records, (SELECT max(seq)::int FROM peg_limits_batches) AS newest',
    );
    expect(rows[0]).toMatchObject({ bare: 0, orphans: 0 });
    expect(rows[0].records).toBe(rows[0].newest);
  } finally {
    await c.end();
  }
  const v = await runToEnd('node', [CLI, 'audit', 'verify', '--store', url]);
  expect(v.code, v.stderr).toBe(0);
  expect(v.stdout).toMatch(/links up: \d+ records, positions 1…\d+/);
}

/** Every acknowledged id is in the log once; every replica reaches one position and one state. */
export async function allAgree(url: string, nodes: Proc[], acked: Set<string>): Promise<void> {
  const ids = await loggedWithdrawals(url);
  for (const id of acked) expect(ids.get(id), id).toBe(1);
  for (const [id, n] of ids) expect(n, id).toBe(1);
  let seen: Array<string | null> = [];
  for (let i = 0; i < 100; i++) {
    seen = await Promise.all(
      nodes.map(async (p) => (await fetch(`${p.url}/limits`)).headers.get('peg-limits-position')),
    );
    if (new Set(seen).size === 1) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(new Set(seen).size).toBe(1);
  const bodies = await Promise.all(nodes.map(async (p) => (await fetch(`${p.url}/limits`)).text()));
  expect(new Set(bodies).size).toBe(1);
  // The command runs on the embedded configuration: a 100 BTC window.
  expect((decodeJson(bodies[0]!) as { availableToWithdraw: bigint }).availableToWithdraw).toBe(
    10_000_000_000n - 3n * BigInt(ids.size),
  );
  await trailAgrees(url);
}

/** Waits until each of `nodes` accepts a change of its own (20 s at most); `acked` gets them. */
export async function everyOneWrites(nodes: Proc[], acked: Set<string>): Promise<void> {
  const through = async (p: Proc) => {
    for (let i = 0; i < 200; i++) {
      const r = await post(p.url, {
        type: 'withdrawalRequested',
        id: `after-${p.child.pid}-${i}`,
        account: 'y',
        amount: 3n,
        height: 100,
      });
      if (r.status === 200) {
        acked.add(`after-${p.child.pid}-${i}`);
        return true;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    return false;
  };
  expect(await Promise.all(nodes.map(through))).toEqual(nodes.map(() => true));
}

/**
 * Finds the replica process that holds the write lock (by the application name its
 * connections carry) and stops it there with SIGSTOP: stopped, it cannot release the lock
 * until it is continued or killed. Resolves with its index in `nodes`.
 */
export async function stopLockHolder(url: string, nodes: Proc[]): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const holder = async () => {
    const { rows } = await c.query(
      `SELECT a.application_name AS name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
       WHERE l.locktype = 'advisory' AND l.objid = $1 AND l.granted`,
      [WRITE_LOCK],
    );
    return Number(/^peg-limits (\d+)$/.exec(rows[0]?.name ?? '')?.[1]);
  };
  try {
    for (let tries = 0; tries < 5_000; tries++) {
      const pid = await holder();
      const i = nodes.findIndex((n) => n.child.pid === pid);
      if (i < 0) continue;
      process.kill(pid, 'SIGSTOP');
      if ((await holder()) === pid) return i;
      process.kill(pid, 'SIGCONT'); // it let go just before: try again
    }
    throw new Error('no replica was seen holding the write lock');
  } finally {
    await c.end();
  }
}

/** What a file of replica tests shares: its database server and the replicas it started. */
export interface Replicas {
  /** The private PostgreSQL server (started before the file's tests). */
  readonly db: TestPostgres;
  /** The replicas started in this process, closed after the file's tests. */
  readonly running: RunningServer[];
  /** The replicas started as processes, killed after the file's tests. */
  readonly procs: Proc[];
  /** A replica in this process on the log at `url`, with alerts to `alertUrls`. */
  replica(url: string, extra?: Partial<PgLogOptions>, alertUrls?: string[]): Promise<RunningServer>;
  /** A replica in a process of its own (the command), on the log at `url`. */
  childReplica(url: string, extra?: string[]): Promise<Proc>;
}

/** Starts a private PostgreSQL before the calling file's tests, and cleans up after them. */
export function useReplicas(): Replicas {
  let db: TestPostgres | undefined;
  const running: RunningServer[] = [];
  const procs: Proc[] = [];
  beforeAll(() => {
    db = startPostgres();
  });
  afterAll(async () => {
    for (const p of procs) killGroup(p);
    const t = performance.now();
    await Promise.all(running.map((s) => s.close().catch(() => undefined)));
    console.log(`${running.length} replicas closed in ${(performance.now() - t).toFixed(0)} ms`);
    db?.destroy();
  }, 60_000);
  return {
    get db() {
      if (db === undefined) throw new Error('the database starts before the tests');
      return db;
    },
    running,
    procs,
    async replica(url, extra = {}, alertUrls = []) {
      const s = await startServer({
        log: await openPgLog({ url, initial: initial(), ...extra }),
        port: 0,
        adminToken: TOKEN,
        // Their cursors and leases in the database, as the command keeps them.
        alerts: {
          urls: alertUrls,
          firstDelayMs: 50,
          cursors: alertUrls.length > 0 ? pgAlertCursors(url) : undefined,
        },
      });
      running.push(s);
      return s;
    },
    async childReplica(url, extra = []) {
      const p = await startServe(
        ['--quiet', '--store', url, '--keep-batches', '100000', ...extra],
        { PEG_LIMITS_ADMIN_TOKEN: TOKEN },
      );
      procs.push(p);
      return p;
    },
  };
}
