#!/usr/bin/env node
/**
 * `npm run soak`: a simulated year on the chain, as an operator runs the service. The built
 * command on a data folder (`peg-limits serve --stacks-observer`, its defaults otherwise) is
 * fed a year of Stacks blocks through the observer port, one at a time as a node posts them:
 * 52,560 burn blocks (SOAK_BURN_BLOCKS), about one Stacks block each and a second one in
 * one burn block of twenty, one or two withdrawal requests a block with a burst of 20 to 60
 * in one block of two hundred, 3% of the requests rejected a few blocks later, and a fork
 * about every two weeks (one to three Stacks blocks orphaned, their requests mined again in
 * the new branch). At each month's end it reads `GET /window` and holds its `withdrawn`
 * equal to its own recount of the requests, has the server run two full GCs and report its
 * heap and resident size (bench/gc-on-signal.mjs), measures the data folder by file, and
 * restarts the server: SIGKILL at the end of months 3, 6 and 9 (a crash: no snapshot at
 * the stop), SIGTERM otherwise. Prints a table month by month: the answers' p99 and the
 * slowest (what the node waits for), the heap and RSS after GC, the data folder, the
 * restart's time. Deterministic (a seeded generator). Loopback only; about three minutes.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  contractPrincipalCV,
  serializeCV,
  stringAsciiCV,
  tupleCV,
  uintCV,
} from '@stacks/transactions';

const BURN_BLOCKS = Number(process.env.SOAK_BURN_BLOCKS ?? 52_560);
const MONTHS = 12;
const PER_MONTH = Math.ceil(BURN_BLOCKS / MONTHS);
const CRASH_MONTHS = new Set([3, 6, 9]);
const REGISTRY = 'SM3VDXK3WZZSA84XXFKAFAF15NNZX32CTSG82JFQ4.sbtc-registry';
const DEPLOYER = 'SP3FBR2AGK5H9QBDH3EEN6DF8EK8JY7RX8QJ5SVTE';
const ACCOUNTS = 400;
const WINDOW = 144;
const FIRST_BURN = 870_000;
const json = process.argv.includes('--json');

// A seeded generator (mulberry32): the same year every run.
let seed = 0x5eed;
function random() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const between = (lo, hi) => lo + Math.floor(random() * (hi - lo + 1));

const hex = (n) => `0x${n.toString(16).padStart(64, '0')}`;
const print = (tuple) => `0x${serializeCV(tupleCV({ ...tuple }))}`;
const senders = Array.from({ length: ACCOUNTS }, (_, i) =>
  contractPrincipalCV(DEPLOYER, `wallet-${i}`),
);

function payload(block) {
  const events = [];
  for (const r of block.requests)
    events.push({
      topic: stringAsciiCV('withdrawal-create'),
      'request-id': uintCV(r.id),
      amount: uintCV(r.amount),
      sender: senders[r.account],
      'block-height': uintCV(r.burn),
    });
  for (const id of block.rejections)
    events.push({ topic: stringAsciiCV('withdrawal-reject'), 'request-id': uintCV(id) });
  return JSON.stringify({
    index_block_hash: hex(block.hash),
    parent_index_block_hash: hex(block.parent),
    block_height: block.height,
    burn_block_height: block.burn,
    burn_block_hash: hex(block.burn),
    events: events.map((e, i) => ({
      committed: true,
      type: 'contract_event',
      event_index: i,
      contract_event: { contract_identifier: REGISTRY, topic: 'print', raw_value: print(e) },
    })),
  });
}

// ---- the server ---------------------------------------------------------------------------

const dir = mkdtempSync(join(tmpdir(), 'peg-limits-soak-'));
const data = join(dir, 'data');
let server;

async function start() {
  const out = join(dir, `output-${Date.now()}.log`);
  const fd = openSync(out, 'w');
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      '--expose-gc',
      '--import',
      './bench/gc-on-signal.mjs',
      'dist/cli.js',
      'serve',
      '--port',
      '0',
      '--data',
      data,
      '--stacks-observer',
      '127.0.0.1:0',
      '--stacks-history-complete',
    ],
    { stdio: ['ignore', fd, fd] },
  );
  let exited;
  child.once('exit', (code) => {
    exited = code;
  });
  for (;;) {
    const text = readFileSync(out, 'utf8');
    const url = /listening on (\S+)/.exec(text)?.[1];
    const observer = /stacks observer on (\S+)/.exec(text)?.[1];
    if (url !== undefined && observer !== undefined)
      return { child, out, url, observer, startMs: performance.now() - started };
    if (exited !== undefined) throw new Error(`the server exited (${exited}): ${text.slice(-800)}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function stop(how) {
  const { child } = server;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill(how);
  await gone;
}

// Two full GCs in the server, then its heap and resident size (from its output file).
async function afterGc() {
  const before = readFileSync(server.out, 'utf8').length;
  server.child.kill('SIGUSR2');
  for (;;) {
    const m = /rss after gc (\d+) heap (\d+)/.exec(readFileSync(server.out, 'utf8').slice(before));
    if (m) return { rss: Number(m[1]) * 1024, heap: Number(m[2]) };
    await new Promise((r) => setTimeout(r, 10));
  }
}

function sizeOf(path) {
  const s = statSync(path);
  if (!s.isDirectory()) return s.size;
  return readdirSync(path).reduce((sum, name) => sum + sizeOf(join(path, name)), 0);
}

function folder() {
  const sizes = {};
  for (const name of readdirSync(data)) sizes[name] = sizeOf(join(data, name));
  return sizes;
}

// ---- the chain ----------------------------------------------------------------------------

// Every request the main chain holds, and the ids rejected on it: the recount.
const requests = new Map();
const rejected = new Set();
let nextId = 1;
let nextHash = 1;
let head = { hash: 0, height: 0, burn: FIRST_BURN - 1 };
// The last blocks of the main chain, for a fork to orphan.
const recent = [];
// Requests waiting for their rejection: [Stacks blocks to wait, id].
let toReject = [];

function newRequests(burn) {
  const n = random() < 0.005 ? between(20, 60) : between(0, 3);
  const out = [];
  for (let i = 0; i < n; i++) {
    const r = {
      id: nextId++,
      amount: between(10_000, 50_000_000),
      account: between(0, ACCOUNTS - 1),
      burn,
    };
    out.push(r);
    if (random() < 0.03) toReject.push([between(1, 10), r.id]);
  }
  return out;
}

function dueRejections() {
  const due = [];
  const still = [];
  for (const [wait, id] of toReject) {
    if (wait <= 1 && requests.has(id)) due.push(id);
    else still.push([wait - 1, id]);
  }
  toReject = still;
  return due;
}

function connect(block) {
  for (const r of block.requests) requests.set(r.id, r);
  for (const id of block.rejections) rejected.add(id);
  head = block;
  recent.push(block);
  if (recent.length > 4) recent.shift();
}

function recount() {
  let sum = 0n;
  for (const r of requests.values())
    if (!rejected.has(r.id) && r.burn > head.burn - WINDOW && r.burn <= head.burn)
      sum += BigInt(r.amount);
  return sum;
}

const q = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0;
};

async function post(block, times) {
  const body = payload(block);
  const t = performance.now();
  const r = await fetch(`${server.observer}/new_block`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  const text = await r.text();
  times.push(performance.now() - t);
  if (r.status !== 200) throw new Error(`block ${block.height}: ${r.status} ${text}`);
}

// ---- the year -----------------------------------------------------------------------------

const rows = [];
server = await start();
const firstStart = server.startMs;
let burn = FIRST_BURN - 1;
let forks = 0;
let stacksBlocks = 0;
const totals = { requests: 0, rejections: 0 };
const forkEvery = Math.max(50, Math.floor(BURN_BLOCKS / 26));
for (let month = 1; month <= MONTHS; month++) {
  const times = [];
  const counts = { blocks: 0, requests: 0, rejections: 0, forks: 0 };
  const last = Math.min(FIRST_BURN - 1 + month * PER_MONTH, FIRST_BURN - 1 + BURN_BLOCKS);
  while (burn < last) {
    burn++;
    const stacksInBurn = random() < 0.05 ? 2 : 1;
    for (let k = 0; k < stacksInBurn; k++) {
      const block = {
        hash: nextHash++,
        parent: head.hash,
        height: head.height + 1,
        burn,
        requests: newRequests(burn),
        rejections: dueRejections(),
      };
      await post(block, times);
      connect(block);
      counts.blocks++;
      counts.requests += block.requests.length;
      counts.rejections += block.rejections.length;
    }
    // A fork: the last one to three Stacks blocks orphaned (none that carried a rejection),
    // a branch of as many from the block below them, with the same requests.
    const depth = between(1, 3);
    const orphaned = recent.slice(-depth);
    if (
      (burn - FIRST_BURN) % forkEvery === forkEvery - 1 &&
      orphaned.length === depth &&
      orphaned.every((b) => b.rejections.length === 0) &&
      recent.length > depth
    ) {
      const base = recent[recent.length - depth - 1];
      for (const b of orphaned) for (const r of b.requests) requests.delete(r.id);
      recent.length = recent.length - depth;
      head = base;
      for (const b of orphaned) {
        const again = { ...b, hash: nextHash++, parent: head.hash };
        await post(again, times);
        connect(again);
        counts.blocks++;
      }
      counts.forks++;
    }
  }
  // The month's end: the window against the recount, the memory, the folder, a restart.
  const window = await (await fetch(`${server.url}/window`)).json();
  const expected = recount();
  const agrees = BigInt(window.withdrawn) === expected && window.tip === head.burn;
  const memory = await afterGc();
  const how = CRASH_MONTHS.has(month) ? 'SIGKILL' : 'SIGTERM';
  const files = folder();
  let restartMs = null;
  if (month < MONTHS) {
    await stop(how);
    server = await start();
    restartMs = server.startMs;
  }
  stacksBlocks += counts.blocks;
  forks += counts.forks;
  totals.requests += counts.requests;
  totals.rejections += counts.rejections;
  rows.push({
    month,
    ...counts,
    p99: q(times, 0.99),
    max: Math.max(...times),
    rate: counts.blocks / (times.reduce((a, b) => a + b, 0) / 1000),
    heap: memory.heap,
    rss: memory.rss,
    files,
    agrees,
    withdrawn: String(window.withdrawn),
    expected: String(expected),
    restart: month < MONTHS ? `${how} ${(restartMs / 1000).toFixed(2)} s` : '—',
  });
  if (!agrees) {
    console.error(
      `month ${month}: GET /window says ${window.withdrawn} withdrawn at tip ${window.tip}, the recount ${expected} at ${head.burn}`,
    );
    break;
  }
}
await stop('SIGTERM');

const MIB = 1024 * 1024;
const mib = (n) => (n / MIB).toFixed(1);
if (json) {
  console.log(JSON.stringify({ rows, stacksBlocks, forks, totals, firstStart }));
} else {
  const names = [...new Set(rows.flatMap((r) => Object.keys(r.files)))].sort();
  console.log(
    `A year on the chain: ${BURN_BLOCKS} burn blocks, ${stacksBlocks} Stacks blocks posted to the observer (forks included), ${totals.requests} withdrawal requests, ${totals.rejections} rejections, ${forks} forks.\n`,
  );
  console.log(
    `| month | blocks | requests | answers p99 / slowest | blocks a second | heap / RSS after GC (MiB) | ${names.map((n) => `${n} (MiB)`).join(' | ')} | restart | window = recount |`,
  );
  console.log(`|${'---|'.repeat(8 + names.length)}`);
  for (const r of rows)
    console.log(
      `| ${r.month} | ${r.blocks} | ${r.requests} | ${r.p99.toFixed(1)} / ${r.max.toFixed(0)} ms | ${r.rate.toFixed(0)} | ${mib(r.heap)} / ${mib(r.rss)} | ${names.map((n) => mib(r.files[n] ?? 0)).join(' | ')} | ${r.restart} | ${r.agrees ? 'yes' : `NO (${r.withdrawn} ≠ ${r.expected})`} |`,
    );
  const end = rows.at(-1).files;
  const total = Object.values(end).reduce((a, b) => a + b, 0);
  console.log(
    `\nThe data folder after the year: ${mib(total)} MiB, of which the audit trail ${mib(end.audit ?? 0)} MiB.`,
  );
}
if (!rows.every((r) => r.agrees) || rows.length < MONTHS) process.exit(1);
