import pg from 'pg';
import { describe, expect, test } from 'vitest';
import { decodeJson, encodeJson } from '../../../src/index.js';
import { WRITE_LOCK } from '../../../src/server/postgres/pg-log.js';
import {
  type FailoverAddress,
  failoverAddress,
  loggedWithdrawals,
  POSTGRES_AVAILABLE,
  POSTGRES_MISSING,
  startPostgres,
  startStandby,
  type TestStandby,
} from '../../support/postgres.js';
import { eventually, killGroup, type Proc, waitFor } from '../../support/proc.js';

import {
  allAgree,
  everyOneWrites,
  post,
  stopLockHolder,
  useReplicas,
  withdrawal,
  writeStorm,
} from '../../support/replicas.js';
import { TOKEN } from '../../support/tokens.js';

if (!POSTGRES_AVAILABLE) console.warn(`SKIPPING the replica tests: ${POSTGRES_MISSING}`);

describe.skipIf(!POSTGRES_AVAILABLE)(
  'replicas over one PostgreSQL: what goes wrong: locks, restarts, kills, failover',
  () => {
    const h = useReplicas();
    const { replica, childReplica } = h;

    test('a write lock held by another for over 2 s refuses changes alone, 503 write_conflict with Retry-After, until it is released', async () => {
      const url = await h.db.database();
      const a = await replica(url);
      expect((await post(a.url, { type: 'blockConnected', height: 100 })).status).toBe(200);
      const holder = new pg.Client({ connectionString: url });
      await holder.connect();
      await holder.query('SELECT pg_advisory_lock($1)', [WRITE_LOCK]);
      try {
        const t = performance.now();
        const r = await fetch(`${a.url}/admin/events`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
          body: encodeJson({ type: 'blockConnected', height: 101 }),
        });
        const took = performance.now() - t;
        expect(r.status).toBe(503);
        expect(r.headers.get('retry-after')).toBe('1');
        expect(decodeJson(await r.text())).toMatchObject({ code: 'write_conflict' });
        expect(took).toBeGreaterThanOrEqual(1_900);
        expect(took).toBeLessThan(7_000);
        expect((await fetch(`${a.url}/limits`)).status).toBe(200);
      } finally {
        await holder.end();
      }
      // The lock went with the holder's connection.
      const after = await post(a.url, { type: 'blockConnected', height: 101 });
      expect(after.status, after.body).toBe(200);
      expect(after.position).toBe('2');
    });

    test('the database restarted in the middle of traffic: changes refused with 503, reads go on, recovery without a restart', async () => {
      const url = await h.db.database();
      const [a, b] = [await replica(url), await replica(url)];
      expect((await post(a.url, { type: 'blockConnected', height: 100 })).status).toBe(200);
      await waitFor(() => b.service.state.tip === 100);
      h.db.stop();
      try {
        const refused = await post(b.url, { type: 'blockConnected', height: 101 });
        expect(refused.status).toBe(503);
        expect(decodeJson(refused.body)).toMatchObject({ code: 'store_unavailable' });
        const read = await fetch(`${a.url}/limits`);
        expect(read.status).toBe(200);
        await waitFor(() => !a.log.writable, 5_000);
        const again = await fetch(`${a.url}/limits`);
        expect(again.headers.get('peg-limits-store')).toBe('unavailable');
        expect(again.headers.get('peg-limits-position')).toBe('1');
        // Not ready, and it says why; still healthy (it serves).
        const ready = await fetch(`${a.url}/readyz`);
        expect(ready.status).toBe(503);
        expect(decodeJson(await ready.text())).toMatchObject({ code: 'store_unavailable' });
        expect((await fetch(`${a.url}/healthz`)).status).toBe(200);
      } finally {
        h.db.start();
      }
      // Both come back by themselves, and take changes again.
      const taken = async () =>
        (await post(b.url, { type: 'blockConnected', height: 101 })).status === 200;
      expect(await eventually(taken, 10_000, 100)).toBe(true);
      await waitFor(() => a.service.state.tip === 101, 10_000);
      expect((await post(a.url, { type: 'blockConnected', height: 102 })).status).toBe(200);
      const read = await fetch(`${a.url}/limits`);
      expect(read.headers.get('peg-limits-store')).toBeNull();
      expect((await fetch(`${a.url}/readyz`)).status).toBe(200);
    });

    test('SIGKILL a replica in the middle of writes, many rounds: the others go on, the restarted one catches up, nothing acknowledged is lost', async () => {
      const url = await h.db.database();
      const start = () => childReplica(url, ['--snapshot-every', '40']);
      const nodes = [await start(), await start(), await start()];
      expect((await post(nodes[0]!.url, { type: 'blockConnected', height: 100 })).status).toBe(200);
      const acked = new Set<string>();
      for (let round = 0; round < 6; round++) {
        const stop = writeStorm(nodes, acked, `r${round}`, 4);
        await new Promise((r) => setTimeout(r, 200 + Math.random() * 300));
        const victim = round % 3;
        killGroup(nodes[victim]!, 'SIGKILL');
        await nodes[victim]!.exited;
        // The survivors go on accepting.
        const before = acked.size;
        await waitFor(() => acked.size > before + 20, 10_000);
        await stop();
        nodes[victim] = await start();
      }
      // Every replica reaches the same position and the same limits; the log has every
      // acknowledged withdrawal exactly once.
      await allAgree(url, nodes, acked);
    });

    test('SIGKILL the replica that holds the write lock, mid-transaction, three rounds: its connection frees the lock, the others go on, nothing acknowledged is lost', async () => {
      const url = await h.db.database();
      const nodes = [await childReplica(url), await childReplica(url), await childReplica(url)];
      expect((await post(nodes[0]!.url, { type: 'blockConnected', height: 100 })).status).toBe(200);
      const acked = new Set<string>();
      for (let round = 0; round < 3; round++) {
        const stop = writeStorm(nodes, acked, `k${round}`);
        await new Promise((r) => setTimeout(r, 200));
        const victim = await stopLockHolder(url, nodes);
        killGroup(nodes[victim]!, 'SIGKILL');
        await nodes[victim]!.exited;
        // The survivors take the lock at once and go on accepting.
        const before = acked.size;
        const t = performance.now();
        await waitFor(() => acked.size > before + 20, 10_000);
        console.log(
          `round ${round}: 20 writes accepted ${(performance.now() - t).toFixed(0)} ms after the lock holder was killed`,
        );
        await stop();
        nodes[victim] = await childReplica(url);
      }
      await allAgree(url, nodes, acked);
    });

    test('the database restarted under a replica that holds the write lock: its transaction is rolled back, nothing acknowledged is lost or doubled, and every replica goes on without a restart', async () => {
      const url = await h.db.database();
      const nodes = [await childReplica(url), await childReplica(url), await childReplica(url)];
      expect((await post(nodes[0]!.url, { type: 'blockConnected', height: 100 })).status).toBe(200);
      const acked = new Set<string>();
      const stop = writeStorm(nodes, acked, 'r');
      await new Promise((r) => setTimeout(r, 200));
      const victim = await stopLockHolder(url, nodes);
      try {
        h.db.stop();
        h.db.start();
      } finally {
        process.kill(nodes[victim]!.child.pid!, 'SIGCONT');
      }
      // All three take writes again, the one that held the lock too.
      await everyOneWrites(nodes, acked);
      await stop();
      await allAgree(url, nodes, acked);
    });

    test.each([
      'a list of both servers, the standby first, with target_session_attrs=read-write',
      'a failover address',
    ])(
      'a failover to a synchronous standby under writes, the replicas reaching the database through %s: the standby promoted, every replica takes writes again without a restart, nothing acknowledged is lost or doubled',
      async (way) => {
        const listed = way.startsWith('a list');
        const primary = startPostgres();
        let standby: TestStandby | undefined;
        let address: FailoverAddress | undefined;
        const nodes: Proc[] = [];
        const c = new pg.Client({ connectionString: primary.url });
        try {
          const direct = await primary.database();
          const name = new URL(direct).pathname.slice(1);
          standby = startStandby(primary);
          // From now on a commit on the primary returns only once the standby has it.
          await c.connect();
          await c.query("ALTER SYSTEM SET synchronous_standby_names = '*'");
          await c.query('SELECT pg_reload_conf()');
          await waitFor(
            async () =>
              (await c.query('SELECT sync_state FROM pg_stat_replication')).rows[0]?.sync_state ===
              'sync',
          );
          // The standby is listed first: read-only until promoted, it is passed over.
          const sockets = [standby, primary].map((s) => encodeURIComponent(s.dir)).join(',');
          address = listed ? undefined : await failoverAddress(primary.socket);
          const url = listed
            ? `postgres://postgres@localhost/${name}?host=${sockets}&port=${standby.port},${primary.port}&target_session_attrs=read-write`
            : address!.urlOf(direct);
          for (let i = 0; i < 3; i++) nodes.push(await childReplica(url));
          expect((await post(nodes[0]!.url, { type: 'blockConnected', height: 100 })).status).toBe(
            200,
          );
          const acked = new Set<string>();
          const stop = writeStorm(nodes, acked, 'f');
          await waitFor(() => acked.size >= 50, 10_000);
          // The standby falls behind (the primary's WAL sender stopped), then the primary
          // crashes: a change acknowledged meanwhile would be missing from the standby, so with
          // a synchronous standby none may be acknowledged.
          const sender = (await c.query('SELECT pid FROM pg_stat_replication')).rows[0].pid;
          await c.end();
          process.kill(sender, 'SIGSTOP');
          const stalled = acked.size;
          await new Promise((r) => setTimeout(r, 500));
          primary.crash();
          const atCrash = acked.size;
          // The standby is promoted and the address follows it.
          const promoting = performance.now();
          standby.promote();
          const promoted = performance.now();
          address?.pointAt(standby.socket);
          await everyOneWrites(nodes, acked);
          console.log(
            `failover through ${listed ? 'a list of servers' : 'an address'}: ${stalled} changes acknowledged before the standby stalled, ${atCrash - stalled} while it was stalled; promoted in ${(promoted - promoting).toFixed(0)} ms, then every replica took a change within ${(performance.now() - promoted).toFixed(0)} ms`,
          );
          await stop();
          expect(stalled).toBeGreaterThanOrEqual(50);
          // The log as the promoted standby holds it (the test's own client reads one host).
          await allAgree(standby.urlOf(name), nodes, acked);
        } finally {
          await c.end().catch(() => undefined);
          for (const n of nodes) killGroup(n);
          await address?.close();
          standby?.destroy();
          primary.destroy();
        }
      },
    );

    test('a database behind this replica (rows it applied are gone, as after a failover to a standby that did not have them): once reconnected it takes no writes, is not ready and says why, once', async () => {
      const url = await h.db.database();
      const lines: string[] = [];
      const a = await replica(url, { logLine: (l) => lines.push(l) });
      expect((await post(a.url, { type: 'blockConnected', height: 100 })).status).toBe(200);
      for (let i = 0; i < 4; i++) expect((await post(a.url, withdrawal(`w${i}`))).status).toBe(200);
      expect(a.position).toBe(5);
      // The database loses rows 4 and 5, and every connection to it, as in such a failover.
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query('DELETE FROM peg_limits_batches WHERE seq > 3');
      await c.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
      );
      await c.end();
      const behind = /the database's newest row is 3, behind this replica's position 5/;
      let ready: { code: string; detail: string } | undefined;
      await waitFor(async () => {
        const r = await fetch(`${a.url}/readyz`);
        ready = r.status === 503 ? ((await r.json()) as typeof ready) : undefined;
        return behind.test(ready?.detail ?? '');
      }, 5_000);
      expect(ready!.code).toBe('store_unavailable');
      // A write is refused with a 503 that says why, and nothing is inserted; reads go on,
      // flagged, from the replica's own state.
      const w = await post(a.url, withdrawal('w9'));
      expect(w.status).toBe(503);
      expect(JSON.parse(w.body).detail).toMatch(behind);
      const read = await fetch(`${a.url}/limits`);
      expect(read.status).toBe(200);
      expect(read.headers.get('peg-limits-store')).toBe('unavailable');
      expect(read.headers.get('peg-limits-position')).toBe('5');
      expect([...(await loggedWithdrawals(url)).keys()]).toEqual(['w0', 'w1']);
      expect(lines.filter((l) => behind.test(l))).toHaveLength(1);
    });
  },
);
