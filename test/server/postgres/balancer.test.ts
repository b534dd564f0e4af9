/**
 * Three replicas behind HAProxy, with the configuration docs/replicas.md gives (its
 * addresses replaced by loopback ports): changes go to one replica, reads to all, and the
 * changes move to the next replica when that one dies. Needs Debian's `haproxy` and
 * PostgreSQL's binaries; without them it says that it skips, and why; under `CI=true` a
 * missing one is a failure (`.ci/run` installs both).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { encodeJson } from '../../../src/index.js';
import { haproxyConfig } from '../../support/doc-blocks.mjs';
import {
  loggedWithdrawals,
  POSTGRES_AVAILABLE,
  POSTGRES_MISSING,
  startPostgres,
  type TestPostgres,
} from '../../support/postgres.js';
import {
  CLI,
  eventually,
  freePort,
  killGroup,
  type Proc,
  spawnServer,
  tempDir,
  waitFor,
} from '../../support/proc.js';
import { parseExposition, sampleOf } from '../../support/prometheus-text.js';
import { TOKEN } from '../../support/tokens.js';

const HAPROXY = '/usr/sbin/haproxy';
const HAVE_HAPROXY = existsSync(HAPROXY);
const HAPROXY_MISSING = `no ${HAPROXY} (apt-get install haproxy)`;
const ready = HAVE_HAPROXY && POSTGRES_AVAILABLE;

if (!HAVE_HAPROXY) console.warn(`SKIPPING the load-balancer tests: ${HAPROXY_MISSING}`);
if (!POSTGRES_AVAILABLE) console.warn(`SKIPPING the load-balancer tests: ${POSTGRES_MISSING}`);

test('HAProxy and PostgreSQL are there when CI runs the tests', () => {
  if (process.env.CI === 'true') {
    expect(HAVE_HAPROXY, HAPROXY_MISSING).toBe(true);
    expect(POSTGRES_AVAILABLE, POSTGRES_MISSING).toBe(true);
  }
});

describe.skipIf(!ready)('three replicas behind HAProxy', () => {
  let db: TestPostgres;
  let url: string;
  const ports: number[] = [];
  const nodes: Proc[] = [];
  let balancer: ChildProcess | undefined;
  let balancerLog = '';
  let base = '';

  /** Replica `i` (0, 1, 2) in a process of its own, on its fixed port. */
  async function start(i: number): Promise<Proc> {
    const p = await spawnServer(
      'node',
      [CLI, 'serve', '--port', String(ports[i]), '--quiet', '--store', url],
      { PEG_LIMITS_ADMIN_TOKEN: TOKEN },
    );
    nodes[i] = p;
    return p;
  }

  beforeAll(async () => {
    db = startPostgres();
    url = await db.database();
    for (let i = 0; i < 3; i++) ports.push(await freePort());
    for (let i = 0; i < 3; i++) await start(i);
    const dir = tempDir();
    const config = join(dir, 'peg-limits.cfg');
    const port = await freePort();
    writeFileSync(
      config,
      haproxyConfig(
        readFileSync('docs/replicas.md', 'utf8'),
        port,
        ports.map((p) => `127.0.0.1:${p}`),
      ),
    );
    const check = spawnSync(HAPROXY, ['-c', '-f', config], { encoding: 'utf8' });
    expect(check.status, check.stdout + check.stderr).toBe(0);
    // -db: in the foreground, its notes on stderr.
    balancer = spawn(HAPROXY, ['-db', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    balancer.stderr!.on('data', (c: Buffer) => {
      balancerLog += c.toString();
    });
    base = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.ok === true);
  }, 60_000);

  afterAll(() => {
    for (const p of nodes) killGroup(p);
    balancer?.kill('SIGKILL');
    db?.destroy();
  });

  let withdrawals = 0;
  /**
   * A change through the balancer: `events`, by default a withdrawal of 1 with id `id` (a
   * fresh one unless given).
   */
  async function change(
    events?: unknown[],
    id = `w${withdrawals++}`,
  ): Promise<{ status: number; id: string; body: string; position: number }> {
    const r = await fetch(`${base}/admin/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: encodeJson(
        events ?? [{ type: 'withdrawalRequested', id, account: 'a', amount: 1n, height: 100 }],
      ),
    });
    const body = await r.text();
    if (r.status !== 200) balancerLog += `\n${r.status} ${body}`;
    return { status: r.status, id, body, position: Number(r.headers.get('peg-limits-position')) };
  }

  /** A replica's running totals: write transactions, and GET /limits answered. */
  async function figures(i: number): Promise<{ transactions: number; reads: number }> {
    const e = parseExposition(await (await fetch(`http://127.0.0.1:${ports[i]}/metrics`)).text());
    return {
      transactions: sampleOf(e, 'peg_limits_write_transactions_total') ?? 0,
      reads:
        sampleOf(e, 'peg_limits_http_requests_total', { route: '/limits', status: '200' }) ?? 0,
    };
  }

  test('changes go to r1 only, reads to all three', async () => {
    expect((await change([{ type: 'blockConnected', height: 100 }])).status).toBe(200);
    for (let i = 0; i < 20; i++) expect((await change()).status).toBe(200);
    for (let i = 0; i < 30; i++) expect((await fetch(`${base}/limits`)).status).toBe(200);
    const [r1, r2, r3] = await Promise.all([0, 1, 2].map(figures));
    expect(r1!.transactions).toBeGreaterThan(0);
    expect([r2!.transactions, r3!.transactions]).toEqual([0, 0]);
    for (const r of [r1, r2, r3]) expect(r!.reads).toBeGreaterThan(0);
  });

  test('through the balancer, a GET /events stream shows a change, and reads that name its position show it on every replica', async () => {
    const stream = await fetch(`${base}/events`);
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    const made = await change();
    expect(made.status).toBe(200);
    let text = '';
    const deadline = Date.now() + 10_000;
    while (!text.includes(`id: ${made.position}\n`) && Date.now() < deadline) {
      const chunk = await Promise.race([
        reader.read(),
        new Promise<undefined>((r) => setTimeout(r, deadline - Date.now())),
      ]);
      if (chunk === undefined || chunk.done) break;
      text += new TextDecoder().decode(chunk.value);
    }
    await reader.cancel();
    expect(text).toContain(`id: ${made.position}\nevent: limits\n`);
    // Round robin: nine reads reach each replica.
    const before = await Promise.all([0, 1, 2].map(figures));
    for (let i = 0; i < 9; i++) {
      const r = await fetch(`${base}/limits`, {
        headers: { 'peg-limits-min-position': String(made.position) },
      });
      expect(r.status).toBe(200);
      expect(Number(r.headers.get('peg-limits-position'))).toBeGreaterThanOrEqual(made.position);
    }
    const after = await Promise.all([0, 1, 2].map(figures));
    for (const [i, f] of after.entries())
      expect(f.reads, `r${i + 1}`).toBeGreaterThan(before[i]!.reads);
  });

  test('with r1 killed between changes, r2 takes every change until r1 is back, none lost or doubled', async () => {
    const acked: string[] = [];
    const statuses: number[] = [];
    const write = async () => {
      const r = await change();
      statuses.push(r.status);
      if (r.status === 200) acked.push(r.id);
    };
    for (let i = 0; i < 10; i++) await write();
    const before = await Promise.all([1, 2].map(figures));
    killGroup(nodes[0]!);
    await nodes[0]!.exited;
    for (let i = 0; i < 30; i++) await write();
    expect(statuses, balancerLog).toEqual(statuses.map(() => 200));
    const [r2, r3] = await Promise.all([1, 2].map(figures));
    expect(r2!.transactions).toBeGreaterThan(before[0]!.transactions);
    expect(r3!.transactions).toBe(before[1]!.transactions);
    const ids = await loggedWithdrawals(url);
    for (const id of acked) expect(ids.get(id), id).toBe(1);

    // Started again on its port, r1 is checked back in (two checks a second apart) and the
    // changes go to it again; none is refused meanwhile.
    await start(0);
    const back = await eventually(async () => {
      await write();
      return (await figures(0)).transactions > 0;
    }, 15_000);
    expect(back, 'r1 takes changes again').toBe(true);
    expect(statuses, balancerLog).toEqual(statuses.map(() => 200));
    const after = await loggedWithdrawals(url);
    for (const id of acked) expect(after.get(id), id).toBe(1);
  }, 60_000);

  test('a change sent to r1 as it is killed is in the log at most once, and exactly once when sent again', async () => {
    await waitFor(
      async () => (await change()).status === 200 && (await figures(0)).transactions > 0,
    );
    // Stopped, r1 still takes the connection (the kernel queues it) but never reads the
    // change; killed, it drops it. HAProxy sent it already, so it does not send it again.
    killGroup(nodes[0]!, 'SIGSTOP');
    const id = `w${withdrawals++}`;
    // No answer at all (the balancer closes the connection) counts as status 0.
    const sent = change(undefined, id).catch((e: Error) => ({
      status: 0,
      id,
      body: e.message,
      position: 0,
    }));
    await new Promise((r) => setTimeout(r, 200));
    killGroup(nodes[0]!);
    const first = await sent;
    // 200 only if it reached r2 (when the kill came before HAProxy connected); else the
    // balancer's error or no answer, and the outcome is the log's to say: sent again, the
    // change is taken (200) or refused as a withdrawal the log holds already (409).
    if (first.status !== 200) {
      expect([0, 502, 503, 504], first.body).toContain(first.status);
      const again = await change(undefined, first.id);
      expect([200, 409], again.body).toContain(again.status);
      if (again.status === 409) expect(again.body).toMatch(/duplicate_withdrawal/);
    }
    expect((await loggedWithdrawals(url)).get(first.id)).toBe(1);
  }, 60_000);
});
