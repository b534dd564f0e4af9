/**
 * Replicas over one PostgreSQL, the snapshot rows the replicas share: written in slices, upgraded from schema version 1, pruned behind the newest, and the move of a data folder into a database. A private server is started from Debian's
 * binaries; without them these tests say that they skip, and why; under `CI=true` a missing
 * PostgreSQL is a failure (`.ci/run` installs it).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, test } from 'vitest';
import { applyAll, encodeJson, type LimitsEvent, snapshotOf } from '../../../src/index.js';
import { openPgLog, PG_SCHEMA_VERSION } from '../../../src/server/postgres/pg-log.js';
import { closeServers, serveInProcess } from '../../support/in-process.js';
import { POSTGRES_AVAILABLE, POSTGRES_MISSING } from '../../support/postgres.js';
import { CLI, eventually, runToEnd, tempDir } from '../../support/proc.js';
import { initial, post, useReplicas } from '../../support/replicas.js';
import { TOKEN } from '../../support/tokens.js';

afterAll(closeServers);

if (!POSTGRES_AVAILABLE) console.warn(`SKIPPING the replica tests: ${POSTGRES_MISSING}`);

describe.skipIf(!POSTGRES_AVAILABLE)(
  'replicas over one PostgreSQL: snapshots, schema upgrades and the move from a data folder',
  () => {
    const h = useReplicas();
    const { replica } = h;

    test('a snapshot row is written in part rows of a slice each, and a new replica reads it back whole', async () => {
      const url = await h.db.database();
      const a = await replica(url, { snapshotEveryBatches: 3, snapshotSlice: 50 });
      const withdrawals = Array.from({ length: 420 }, (_, i) => ({
        type: 'withdrawalRequested',
        id: `p${i}`,
        account: `acct${i % 13}`,
        amount: BigInt(i + 1),
        height: 1,
      }));
      expect((await post(a.url, { type: 'blockConnected', height: 1 })).status).toBe(200);
      expect((await post(a.url, withdrawals)).status).toBe(200);
      expect((await post(a.url, { type: 'blockConnected', height: 2 })).status).toBe(200);
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      const parts = async () =>
        (await c.query('SELECT parts FROM peg_limits_snapshots WHERE seq = 3')).rows[0]?.parts;
      await eventually(async () => (await parts()) !== undefined, 5_000, 50);
      // 420 withdrawals, 50 a part.
      expect(await parts()).toBe(9);
      const longest = await c.query(
        'SELECT max(length(body)) AS n FROM peg_limits_snapshot_parts WHERE seq = 3',
      );
      expect(Number(longest.rows[0].n)).toBeLessThan(6_000);
      await c.end();
      const b = await openPgLog({ url, initial: initial() });
      expect(b.position).toBe(3);
      expect(encodeJson(snapshotOf(b.state))).toBe(encodeJson(snapshotOf(a.service.state)));
      await b.close();
    });

    test('a database of schema version 1 (whole snapshot rows) is upgraded and read', async () => {
      const url = await h.db.database();
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query('CREATE TABLE peg_limits_meta (key text PRIMARY KEY, value text NOT NULL)');
      await c.query(
        'CREATE TABLE peg_limits_batches (seq bigint PRIMARY KEY, events text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())',
      );
      await c.query(
        'CREATE TABLE peg_limits_snapshots (seq bigint PRIMARY KEY, snapshot text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())',
      );
      await c.query("INSERT INTO peg_limits_meta VALUES ('schema', '1')");
      const r = applyAll(initial(), [
        { type: 'blockConnected', height: 5 },
        { type: 'withdrawalRequested', id: 'v1', account: 'old', amount: 7n, height: 5 },
      ]);
      if (!r.ok) throw r.error;
      await c.query('INSERT INTO peg_limits_snapshots (seq, snapshot) VALUES (4, $1)', [
        encodeJson(snapshotOf(r.state)),
      ]);
      await c.query('INSERT INTO peg_limits_batches (seq, events) VALUES (5, $1)', [
        encodeJson([{ type: 'blockConnected', height: 6 }]),
      ]);
      const log = await openPgLog({ url, initial: initial() });
      expect(log.position).toBe(5);
      expect(log.state.tip).toBe(6);
      expect(encodeJson(snapshotOf(log.state))).toContain('"id":"v1"');
      const meta = await c.query("SELECT value FROM peg_limits_meta WHERE key = 'schema'");
      expect(meta.rows[0].value).toBe(String(PG_SCHEMA_VERSION));
      await c.end();
      await log.close();
    });

    test('snapshot rows every N batches, old rows pruned, and a new replica starts from the newest snapshot', async () => {
      const url = await h.db.database();
      // The deprecated name of snapshotEveryBatches, still taken.
      const a = await replica(url, { snapshotEvery: 5, keepBatches: 3 });
      for (let h = 1; h <= 23; h++)
        expect((await post(a.url, { type: 'blockConnected', height: h })).status).toBe(200);
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      const rows = async () => ({
        batches: (await c.query('SELECT seq FROM peg_limits_batches ORDER BY seq')).rows.map((r) =>
          Number(r.seq),
        ),
        snapshots: (await c.query('SELECT seq FROM peg_limits_snapshots ORDER BY seq')).rows.map(
          (r) => Number(r.seq),
        ),
      });
      // Snapshots are written after the answers: wait for the one at 20 and its pruning.
      let seen = await rows();
      await eventually(
        async () => {
          seen = await rows();
          return seen.snapshots.join() === '20';
        },
        2_500,
        50,
      );
      await c.end();
      expect(seen.snapshots).toEqual([20]);
      expect(seen.batches).toEqual([18, 19, 20, 21, 22, 23]);
      // Rows 1…17 are gone: a new replica can only start from snapshot 20 and the rows after it.
      const b = await replica(url);
      expect(b.position).toBe(23);
      expect(b.service.state.tip).toBe(23);
      expect(await (await fetch(`${b.url}/limits`)).text()).toBe(
        await (await fetch(`${a.url}/limits`)).text(),
      );
    });

    test('migrate-journal moves a data folder into an empty database, and replicas go on from it', async () => {
      const url = await h.db.database();
      const dir = tempDir();
      const config = join(dir, 'config.json');
      writeFileSync(
        config,
        JSON.stringify({ limits: { rollingWithdrawalBlocks: 144, rollingWithdrawalCap: 1000 } }),
      );
      const embedded = await serveInProcess({
        dir: join(dir, 'data'),
        initial: initial(),
        adminToken: TOKEN,
      });
      const events: LimitsEvent[] = [
        { type: 'blockConnected', height: 7 },
        { type: 'withdrawalRequested', id: 'm1', account: 'alice', amount: 300n, height: 7 },
      ];
      expect((await post(embedded.url, events)).status).toBe(200);
      expect(
        (
          await post(embedded.url, {
            type: 'accountLimitsSet',
            account: 'bob',
            limits: { pegCap: 5n },
          })
        ).status,
      ).toBe(200);
      const before = await (await fetch(`${embedded.url}/limits`)).text();
      await embedded.close();
      const moved = await runToEnd('node', [
        CLI,
        'migrate-journal',
        '--data',
        join(dir, 'data'),
        '--store',
        url,
      ]);
      expect(moved.code, moved.stderr).toBe(0);
      expect(moved.stdout).toMatch(/migrated .* a snapshot of 2 batches/);
      const r = await replica(url);
      expect(await (await fetch(`${r.url}/limits`)).text()).toBe(before);
      expect(r.position).toBe(2);
      expect((await post(r.url, { type: 'blockConnected', height: 8 })).position).toBe('3');
      // Into a database that is not empty: refused.
      const again = await runToEnd('node', [
        CLI,
        'migrate-journal',
        '--data',
        join(dir, 'data'),
        '--store',
        url,
      ]);
      expect(again.code).toBe(2);
      expect(again.stderr).toMatch(/the database is not empty/);
    });
  },
);
