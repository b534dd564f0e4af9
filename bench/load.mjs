#!/usr/bin/env node
// `npm run load`: load figures of the server on loopback, each beside its floor (a bare
// node:http server answering the same bytes: status, headers and body). Bounded: a few seconds per run, 127.0.0.1 only.
// Prints a Markdown table; with --readme writes it into docs/operating.md between the load markers.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { encodeJson, generateThrottleSecret, hashThrottleSecret } from '../dist/index.js';
import {
  admin as adminEvents,
  pair as pairRounds,
  startChild,
  startFloor,
  withdrawalRequests,
  writeReadmeTable,
} from './util.mjs';

const SECONDS = Number(process.env.LOAD_SECONDS ?? 4);
const ROUNDS = 3;
const children = [];

const start = async (args) => (await startChild(args, children)).url;

const admin = (url, events) => adminEvents(url, events, encodeJson);

function cannon(url, options) {
  return autocannon({ url, duration: SECONDS, connections: 16, ...options });
}

// Alternating rounds of the two contenders (bench/util.mjs).
const pair = (a, b, expect2xx = true, rounds = ROUNDS) => pairRounds(a, b, expect2xx, rounds);

const rows = [];
// `--small` stops after the first row (for profiling).
class Done extends Error {}
try {
  const dir = mkdtempSync(join(tmpdir(), 'peg-limits-load-'));
  const ours = await start(['peg-limits', dir]);
  // --- GET /limits, the small default body ------------------------------------------------
  const { url: smallFloor, body: small } = await startFloor(
    await fetch(`${ours}/limits`),
    children,
  );
  rows.push([
    `GET /limits (${small.length}-byte body)`,
    await pair(
      () => cannon(`${ours}/limits`),
      () => cannon(`${smallFloor}/limits`),
      true,
      7,
    ),
  ]);
  // --- GET /limits, metrics on against off (they must cost under 10%) ----------------------
  const unmetered = await start([
    'peg-limits',
    mkdtempSync(join(tmpdir(), 'peg-limits-load-')),
    'no-metrics',
  ]);
  rows.push([
    `GET /limits (${small.length}-byte body): metrics on ÷ --no-metrics`,
    await pair(
      () => cannon(`${ours}/limits`),
      () => cannon(`${unmetered}/limits`),
      true,
      7,
    ),
  ]);
  if (process.argv.includes('--small')) throw new Done();

  // --- GET /limits with 10,000 account entries ---------------------------------------------
  for (let chunk = 0; chunk < 10; chunk++) {
    const accountCaps = {};
    for (let i = chunk * 1000; i < (chunk + 1) * 1000; i++)
      accountCaps[`account-${String(i).padStart(5, '0')}`] = {
        pegCap: 10n ** 12n,
        perWithdrawalCap: 10n ** 8n,
      };
    await admin(ours, [
      {
        type: 'limitsSet',
        limits: { rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: 10n ** 15n, accountCaps },
      },
    ]);
  }
  const { url: floor, body } = await startFloor(await fetch(`${ours}/limits`), children);
  const limits = await pair(
    () => cannon(`${ours}/limits`),
    () => cannon(`${floor}/limits`),
  );
  rows.push([
    `GET /limits, 10,000 entries (${(body.length / 1024 / 1024).toFixed(2)} MiB body)`,
    limits,
  ]);

  // --- POST /start_throttle with wrong secrets ----------------------------------------------
  const secret = generateThrottleSecret();
  await admin(ours, [
    { type: 'throttleKeyAdded', name: 'ops-1', secretHash: hashThrottleSecret(secret) },
  ]);
  const wrong = JSON.stringify({ name: 'ops-1', secret: generateThrottleSecret() });
  const refused = await fetch(`${ours}/start_throttle`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: wrong,
  });
  const floor401 = (await startFloor(refused, children)).url;
  const post = { method: 'POST', headers: { 'content-type': 'application/json' }, body: wrong };
  const throttle = await pair(
    () => cannon(`${ours}/start_throttle`, post),
    () => cannon(`${floor401}/start_throttle`, post),
    false,
  );
  rows.push(['POST /start_throttle, wrong secret (401)', throttle]);

  // --- POST /admin/events from 16 clients: group commit vs a flush per request --------------
  const events = (url) =>
    cannon(`${url}/admin/events`, {
      requests: withdrawalRequests(1000),
    });
  const grouped = await start(['peg-limits', mkdtempSync(join(tmpdir(), 'peg-limits-load-'))]);
  const serial = await start([
    'peg-limits',
    mkdtempSync(join(tmpdir(), 'peg-limits-load-')),
    'serial',
  ]);
  await admin(grouped, [{ type: 'blockConnected', height: 1 }]);
  await admin(serial, [{ type: 'blockConnected', height: 1 }]);
  const writes = await pair(
    () => events(grouped),
    () => events(serial),
  );
  rows.push([
    'POST /admin/events, 16 clients: group commit (after) ÷ a flush per request (before)',
    writes,
  ]);
  // The disk's floor: a bare node:http server appending each body and answering once one
  // fdatasync per group covers it.
  const syncFloor = await start(['sync-floor', mkdtempSync(join(tmpdir(), 'peg-limits-floor-'))]);
  const floorEvents = (url, connections) =>
    cannon(`${url}/admin/events`, { connections, requests: withdrawalRequests(1000) });
  rows.push([
    'POST /admin/events, 16 clients ÷ a bare server with one fdatasync per group',
    await pair(
      () => floorEvents(grouped, 16),
      () => floorEvents(syncFloor, 16),
    ),
  ]);
  rows.push([
    'POST /admin/events, 1 client ÷ a bare server with one fdatasync per group',
    await pair(
      () => floorEvents(grouped, 1),
      () => floorEvents(syncFloor, 1),
    ),
  ]);
} catch (e) {
  if (!(e instanceof Done)) throw e;
} finally {
  for (const c of children) c.kill('SIGKILL');
}

const lines = [
  '| load (16 connections, loopback, medians of 3 rounds, 7 for the small body) | req/s | p50 | p99 | baseline req/s | baseline p50 | baseline p99 | ratio (median of per-round ratios) |',
  '|---|---|---|---|---|---|---|---|',
  ...rows.map(
    ([label, { a, b, ratio }]) =>
      `| ${label} | ${a.rps.toFixed(0)} | ${a.p50} ms | ${a.p99} ms | ${b.rps.toFixed(0)} | ${b.p50} ms | ${b.p99} ms | ${ratio.toFixed(2)}× |`,
  ),
];
const table = lines.join('\n');
console.log(table);
if (process.argv.includes('--readme')) writeReadmeTable('load', table, 'docs/operating.md');
const [, limitsRow] = rows[0];
if (limitsRow.a.rps < limitsRow.b.rps / 2) {
  console.error('GET /limits serves less than half the rate of the floor.');
  process.exitCode = 1;
}
