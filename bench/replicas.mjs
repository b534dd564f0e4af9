#!/usr/bin/env node
// `npm run bench:replicas`: figures of replicas over one PostgreSQL, on loopback and a
// private server started here (Debian's binaries): accepted operator changes per second
// through one replica and spread over three, the lag from a commit on one replica to the
// change being visible on another, and start-up from a snapshot with 100k withdrawals.
// Bounded: a few seconds per run. With --readme, writes the table into docs/replicas.md.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { applyAll, createLimitsState, encodeJson, snapshotOf } from '../dist/index.js';
import { admin as adminEvents, startChild, withdrawalRequests, writeReadmeTable } from './util.mjs';

const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';
if (!existsSync(join(BIN, 'initdb'))) {
  console.error(`no PostgreSQL server binaries at ${BIN}: apt-get install postgresql`);
  process.exit(1);
}
const SECONDS = Number(process.env.LOAD_SECONDS ?? 4);
const root = process.getuid?.() === 0;
const pgRun = (cmd, args) =>
  root
    ? execFileSync('runuser', ['-u', 'postgres', '--', join(BIN, cmd), ...args])
    : execFileSync(join(BIN, cmd), args);

const dir = mkdtempSync(join(tmpdir(), 'peg-limits-pgbench-'));
chmodSync(dir, 0o777);
if (root) execFileSync('chown', ['postgres:postgres', dir]);
pgRun('initdb', ['-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '-E', 'UTF8']);
const port = 55_432;
pgRun('pg_ctl', [
  '-D',
  join(dir, 'data'),
  '-o',
  `-k ${dir} -c listen_addresses='' -p ${port}`,
  '-l',
  join(dir, 'log'),
  '-w',
  'start',
]);
const base = `postgres://postgres@localhost/postgres?host=${encodeURIComponent(dir)}&port=${port}`;
const children = [];

async function database(name) {
  const c = new pg.Client({ connectionString: base });
  await c.connect();
  await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  return base.replace('/postgres?', `/${name}?`);
}

const replica = (url) => startChild(['replica', url], children);

const admin = (url, events) => adminEvents(url, events, encodeJson);

function writes(url, connections) {
  return autocannon({
    url: `${url}/admin/events`,
    duration: SECONDS,
    connections,
    requests: withdrawalRequests(1),
  });
}

const rows = [];
try {
  // One replica, 16 connections.
  const one = await database('one');
  const a = await replica(one);
  await admin(a.url, [{ type: 'blockConnected', height: 1 }]);
  const solo = await writes(a.url, 16);
  if (solo.non2xx > 0 || solo.errors > 0)
    throw new Error(`one replica: ${solo.non2xx} not 2xx, ${solo.errors} errors`);
  rows.push([
    'accepted changes/s, one replica, 16 connections',
    `${solo.requests.average.toFixed(0)} (p50 ${solo.latency.p50} ms, p99 ${solo.latency.p99} ms)`,
  ]);

  // Three replicas, 16 connections spread over them (6 + 5 + 5).
  const three = await database('three');
  const nodes = [await replica(three), await replica(three), await replica(three)];
  await admin(nodes[0].url, [{ type: 'blockConnected', height: 1 }]);
  const spread = await Promise.all(nodes.map((r, i) => writes(r.url, i === 0 ? 6 : 5)));
  const total = spread.reduce((s, r) => s + r.requests.average, 0);
  const refused = spread.reduce((s, r) => s + r.non2xx, 0);
  const answered = spread.reduce((s, r) => s + r.requests.total, 0);
  rows.push([
    'accepted changes/s, spread over three replicas, 16 connections',
    `${(total * (1 - refused / Math.max(1, answered))).toFixed(0)} (${refused} of ${answered} refused after ${32} conflicts in a row)`,
  ]);

  // The lag from a commit on one replica to the change being visible on another.
  const lags = [];
  for (let i = 0; i < 200; i++) {
    const position = await admin(nodes[0].url, [
      { type: 'peggedTotalObserved', total: BigInt(i + 1) },
    ]);
    const t = performance.now();
    for (;;) {
      const r = await fetch(`${nodes[1].url}/limits`);
      await r.arrayBuffer();
      if (Number(r.headers.get('peg-limits-position')) >= position) break;
    }
    lags.push(performance.now() - t);
  }
  lags.sort((x, y) => x - y);
  rows.push([
    'lag, commit on one replica to visible on another (200 changes)',
    `median ${lags[100].toFixed(1)} ms, p99 ${lags[198].toFixed(1)} ms`,
  ]);

  // Start-up from a snapshot with 100k withdrawals held.
  const big = await database('big');
  const events = [];
  let id = 0;
  for (let b = 0; b < 2000; b++) {
    events.push({ type: 'blockConnected', height: 800_000 + b });
    for (let i = 0; i < 50; i++)
      events.push({
        type: 'withdrawalRequested',
        id: `s${id++}`,
        account: `a${id % 5000}`,
        amount: 1n,
        height: 800_000 + b,
      });
  }
  const state = applyAll(
    createLimitsState({
      limits: { rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: 10n ** 15n },
    }),
    events,
  ).state;
  const c = new pg.Client({ connectionString: big });
  await c.connect();
  const first = await replica(big); // creates the schema and snapshot 0
  children.pop().kill('SIGKILL');
  await c.query('INSERT INTO peg_limits_snapshots (seq, snapshot) VALUES (1, $1)', [
    encodeJson(snapshotOf(state)),
  ]);
  await c.end();
  void first;
  const started = await replica(big);
  rows.push([
    'start-up from a snapshot with 100,000 withdrawals held (to "listening")',
    `${started.ms.toFixed(0)} ms`,
  ]);
} finally {
  for (const child of children) child.kill('SIGKILL');
  try {
    pgRun('pg_ctl', ['-D', join(dir, 'data'), '-m', 'immediate', '-w', 'stop']);
  } catch {}
  rmSync(dir, { recursive: true, force: true });
}

const table = [
  '| replicas on PostgreSQL (loopback, Unix socket) | figure |',
  '|---|---|',
  ...rows.map(([l, v]) => `| ${l} | ${v} |`),
].join('\n');
console.log(table);
if (process.argv.includes('--readme')) writeReadmeTable('replicas', table, 'docs/replicas.md');
