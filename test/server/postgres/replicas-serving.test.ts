import { createServer as createHttpServer } from 'node:http';
import pg from 'pg';
import { describe, expect, test } from 'vitest';
import { createLimitsClient, decodeJson, type LimitsEvent } from '../../../src/index.js';
import { openPgLog, WRITE_LOCK } from '../../../src/server/postgres/pg-log.js';
import { POSTGRES_AVAILABLE, POSTGRES_MISSING, startPostgres } from '../../support/postgres.js';
import { CLI, runToEnd, waitFor } from '../../support/proc.js';
import { parseExposition, sampleOf } from '../../support/prometheus-text.js';
import {
  checkMetrics,
  HAVE_PROMETHEUS,
  linesOf,
  PROMETHEUS_MISSING,
} from '../../support/promtool.js';

import {
  CAP,
  initial,
  post,
  trailAgrees,
  useReplicas,
  withdrawal,
} from '../../support/replicas.js';
import { TOKEN } from '../../support/tokens.js';

if (!POSTGRES_AVAILABLE) console.warn(`SKIPPING the replica tests: ${POSTGRES_MISSING}`);

describe.skipIf(!POSTGRES_AVAILABLE)(
  'replicas over one PostgreSQL: what each replica serves: the trail, streams, reads, metrics, alerts',
  () => {
    const h = useReplicas();
    const { replica, running } = h;

    test('the audit trail on PostgreSQL holds a record per batch, written in its transaction, served by any replica and checked by verify and at start', async () => {
      const url = await h.db.database();
      const [a, b] = [await replica(url), await replica(url)];
      for (let h = 1; h <= 5; h++)
        expect(
          (await post((h % 2 === 0 ? a : b).url, { type: 'blockConnected', height: h })).status,
        ).toBe(200);
      await waitFor(() => a.position === 5 && b.position === 5);
      const served = await fetch(`${b.url}/admin/audit?after=2`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      const rows = decodeJson(await served.text()) as Array<{ position: bigint; actor: unknown }>;
      expect(rows.map((r) => r.position)).toEqual([3n, 4n, 5n]);
      expect(rows[0]!.actor).toEqual({ kind: 'operator', name: 'admin' });
      await trailAgrees(url);
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        await c.query(
          `UPDATE peg_limits_audit SET record = replace(record, '"height":3', '"height":33') WHERE seq = 3`,
        );
        const v = await runToEnd('node', [CLI, 'audit', 'verify', '--store', url]);
        expect(v.code).toBe(1);
        expect(v.stderr).toMatch(/breaks at position 3/);
        // The newest record changed: a replica does not start on it…
        await c.query(
          `UPDATE peg_limits_audit SET record = replace(record, '"height":5', '"height":55') WHERE seq = 5`,
        );
        await expect(openPgLog({ url, initial: initial() })).rejects.toThrow(
          /the audit trail breaks at position 5/,
        );
        // …unless told to start a new chain, which says so in its first record.
        const repaired = await openPgLog({ url, initial: initial(), auditRepair: true });
        const { rows: newest } = await c.query(
          'SELECT seq, record FROM peg_limits_audit ORDER BY seq DESC LIMIT 1',
        );
        expect(Number(newest[0].seq)).toBe(repaired.position);
        expect(String(newest[0].record)).toMatch(
          /"events":\[\],"repair":\{"after":4,"reason":"[^"]+"\}/,
        );
        await repaired.close();
        await openPgLog({ url, initial: initial() }).then((l) => l.close());
      } finally {
        await c.end();
      }
    });

    test('GET /events works the same on every replica: a change written through one is streamed by another, with its position', async () => {
      const url = await h.db.database();
      const [a, b] = [await replica(url), await replica(url)];
      const controller = new AbortController();
      const r = await fetch(`${b.url}/events`, { signal: controller.signal });
      const reader = r.body!.getReader();
      let text = '';
      const reading = (async () => {
        try {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) return;
            text += new TextDecoder().decode(value);
          }
        } catch {
          // aborted
        }
      })();
      await waitFor(() => text.includes('event: limits'), 5_000);
      const sent = performance.now();
      expect((await post(a.url, { type: 'throttleStarted', initiator: 'ops-a' })).status).toBe(200);
      await waitFor(() => text.includes('id: 1\n'), 5_000);
      expect(performance.now() - sent).toBeLessThan(500);
      expect(text).toContain('event: throttleStarted\ndata: {"initiator":"ops-a","position":1}');
      expect(text).toMatch(/id: 1\nevent: limits\ndata: \{[^\n]*"throttleModeInitiator":"ops-a"/);
      controller.abort();
      await reading;
    });

    test("read your writes: a read through another replica that names the write's position sees it, 100 times out of 100, the client naming it by itself", async () => {
      const url = await h.db.database();
      const [a, b] = [await replica(url), await replica(url)];
      expect((await post(a.url, { type: 'blockConnected', height: 100 })).status).toBe(200);
      let staleWithout = 0;
      for (let i = 0; i < 100; i++) {
        const w = await post(a.url, withdrawal(`w${i}`));
        expect(w.status).toBe(200);
        const plain = await fetch(`${b.url}/limits`);
        await plain.text();
        if (Number(plain.headers.get('peg-limits-position')) < Number(w.position)) staleWithout++;
        const asked = await fetch(`${b.url}/limits`, {
          headers: { 'peg-limits-min-position': w.position! },
        });
        expect(asked.status).toBe(200);
        expect(Number(asked.headers.get('peg-limits-position'))).toBeGreaterThanOrEqual(
          Number(w.position),
        );
        expect(
          (decodeJson(await asked.text()) as { availableToWithdraw: bigint }).availableToWithdraw,
        ).toBe(CAP - BigInt(i + 1));
      }
      console.log(
        `reads through another replica right after a write, older than it: ${staleWithout} of 100 without the header, 0 with it`,
      );
      // A client behind a balancer that sends writes to one replica and reads to another.
      const client = createLimitsClient({
        baseUrl: 'http://balancer',
        fetch: (input, init) => {
          const path = String(input).replace('http://balancer', '');
          return fetch(`${init?.method === 'POST' ? a.url : b.url}${path}`, init);
        },
      });
      for (let i = 0; i < 20; i++) {
        const posted = await client.postEvents(withdrawal(`c${i}`) as LimitsEvent, TOKEN);
        expect(posted.ok).toBe(true);
        const r = await client.getLimits();
        expect(r.ok && r.value.availableToWithdraw).toBe(CAP - 101n - BigInt(i));
      }
    });

    test("GET /metrics counts each replica's write transactions and the time it waited for and held the write lock, and a wait that ran out", async () => {
      const url = await h.db.database();
      const a = await replica(url, { lockWaitMs: 300 });
      const b = await replica(url);
      const figures = async (base: string) => {
        const text = await (await fetch(`${base}/metrics`)).text();
        const e = parseExposition(text);
        return {
          text,
          transactions: sampleOf(e, 'peg_limits_write_transactions_total'),
          waited: sampleOf(e, 'peg_limits_write_lock_wait_seconds_total'),
          held: sampleOf(e, 'peg_limits_write_lock_held_seconds_total'),
          timeouts: sampleOf(e, 'peg_limits_write_lock_timeouts_total'),
        };
      };
      const fresh = await figures(a.url);
      expect(fresh).toMatchObject({ transactions: 0, waited: 0, held: 0, timeouts: 0 });
      expect((await post(a.url, { type: 'blockConnected', height: 100 })).status).toBe(200);
      for (let i = 0; i < 5; i++) {
        expect((await post(a.url, withdrawal(`m${i}`))).status).toBe(200);
        expect((await post(b.url, withdrawal(`n${i}`))).status).toBe(200);
      }
      const after = await figures(a.url);
      // One transaction a change here (each waited for its answer before the next was sent).
      expect(after.transactions).toBe(6);
      expect(after.waited).toBeGreaterThan(0);
      expect(after.held).toBeGreaterThan(0);
      expect(after.timeouts).toBe(0);
      expect((await figures(b.url)).transactions).toBe(5);
      // Held by another for longer than a's 300 ms: refused, and counted.
      const holder = new pg.Client({ connectionString: url });
      await holder.connect();
      await holder.query('SELECT pg_advisory_lock($1)', [WRITE_LOCK]);
      try {
        expect((await post(a.url, withdrawal('refused'))).status).toBe(503);
      } finally {
        await holder.end();
      }
      const refused = await figures(a.url);
      expect(refused.transactions).toBe(7);
      expect(refused.timeouts).toBe(1);
      expect(refused.waited! - after.waited!).toBeGreaterThanOrEqual(0.29);
      expect(refused.held).toBe(after.held);
      if (HAVE_PROMETHEUS) {
        const check = checkMetrics(`${linesOf(refused.text, 'peg_limits_write_')}\n`);
        expect(check.status, check.output).toBe(0);
      } else if (process.env.CI === 'true') expect.fail(PROMETHEUS_MISSING);
    });

    test("GET /metrics shows how full PostgreSQL's notification queue is: a session that listens inside an open transaction makes it grow, and it drains when that session commits", async () => {
      // A server of its own: the queue is the whole server's, shared by every database on it.
      const own = startPostgres();
      const url = own.url;
      const a = await replica(url);
      const usage = async () =>
        sampleOf(
          parseExposition(await (await fetch(`${a.url}/metrics`)).text()),
          'peg_limits_notification_queue_usage',
        );
      expect(await usage()).toBe(0);
      // A session that listens and stays in a transaction reads no notification until it ends,
      // so the database keeps every one after it (as for a replica that hangs).
      const idle = new pg.Client({ connectionString: url });
      await idle.connect();
      try {
        await idle.query('LISTEN peg_limits');
        await idle.query('BEGIN');
        await idle.query('SELECT 1');
        expect((await post(a.url, { type: 'blockConnected', height: 100 })).status).toBe(200);
        // About 80 KB of notifications (ten 8 KB pages of the queue): 100 changes of 10
        // withdrawals each, every one announced with its rows.
        for (let i = 0; i < 100; i++) {
          const batch = Array.from({ length: 10 }, (_, j) => withdrawal(`q${i}-${j}`));
          expect((await post(a.url, batch)).status).toBe(200);
        }
        const full = await usage();
        expect(full).toBeGreaterThan(0);
        if (HAVE_PROMETHEUS) {
          const text = await (await fetch(`${a.url}/metrics`)).text();
          const check = checkMetrics(`${linesOf(text, 'peg_limits_notification_')}\n`);
          expect(check.status, check.output).toBe(0);
        } else if (process.env.CI === 'true') expect.fail(PROMETHEUS_MISSING);
        await idle.query('COMMIT');
        // Once it has read them the queue can be dropped (the database frees whole pages).
        await waitFor(async () => (await usage()) === 0, 10_000);
      } finally {
        await idle.end();
        await a.close();
        running.splice(running.indexOf(a), 1);
        own.destroy();
      }
    });

    test("each alert is sent once per change across the replicas (one holds the URL's lease), and another takes over when it stops", async () => {
      const url = await h.db.database();
      const got: string[] = [];
      const hook = createHttpServer((req, res) => {
        let body = '';
        req.on('data', (c: Buffer) => {
          body += c.toString();
        });
        req.on('end', () => {
          got.push(body);
          res.writeHead(204);
          res.end();
        });
      });
      await new Promise<void>((r) => hook.listen(0, '127.0.0.1', () => r()));
      const hookUrl = `http://127.0.0.1:${(hook.address() as { port: number }).port}/`;
      try {
        const a = await replica(url, {}, [hookUrl]);
        const b = await replica(url, {}, [hookUrl]);
        expect((await post(a.url, { type: 'throttleStarted', initiator: 'ops-1' })).status).toBe(
          200,
        );
        await waitFor(() => b.service.state !== undefined && got.length >= 1, 5_000);
        await waitFor(() => b.position === a.position, 5_000);
        expect((await post(b.url, { type: 'throttleEnded' })).status).toBe(200);
        await waitFor(() => got.length >= 2, 5_000);
        await new Promise((r) => setTimeout(r, 700));
        expect(got.map((g) => (decodeJson(g) as { type: string }).type)).toEqual([
          'throttleStarted',
          'throttleEnded',
        ]);
        // The lease holder may be either: stop one, and the other delivers what comes next.
        await a.close();
        expect((await post(b.url, { type: 'throttleStarted', initiator: 'ops-2' })).status).toBe(
          200,
        );
        await waitFor(() => got.length >= 3, 10_000);
        await new Promise((r) => setTimeout(r, 500));
        expect(got.map((g) => (decodeJson(g) as { initiator: string }).initiator)).toEqual([
          'ops-1',
          'ops-1',
          'ops-2',
        ]);
      } finally {
        hook.close();
      }
    });
  },
);
