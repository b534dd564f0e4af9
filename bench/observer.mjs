#!/usr/bin/env node
/**
 * The Stacks event observer's throughput and answer times (`npm run bench:observer`): the
 * built command on a data folder, fed `/new_block` bodies one at a time, as a node sends
 * them. Prints blocks per second for empty blocks (the same burn height: only what the
 * observer remembers is written; a new burn height each: a batch and its record too), for
 * blocks of 100 withdrawal requests, the time of a fork of depth 3 (three orphaned blocks of
 * 100 requests each), and the p50/p99/max of the answers to a node (a block of 10 requests
 * each) while 16 connections read GET /limits, and while compactions run with about 200,000
 * withdrawals held (a node's default time-out is 1 s). Bounded: about a minute, loopback only.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { principalCV, serializeCV, stringAsciiCV, tupleCV, uintCV } from '@stacks/transactions';
import autocannon from 'autocannon';

const REGISTRY = 'SM3VDXK3WZZSA84XXFKAFAF15NNZX32CTSG82JFQ4.sbtc-registry';
const SENDER = 'SP3FBR2AGK5H9QBDH3EEN6DF8EK8JY7RX8QJ5SVTE';
const hex = (n) => `0x${n.toString(16).padStart(64, '0')}`;
let nextId = 1;

function body(hash, parent, height, burnHeight, requests = 0, burn = 0) {
  const events = [];
  for (let i = 0; i < requests; i++)
    events.push({
      committed: true,
      type: 'contract_event',
      event_index: i,
      contract_event: {
        contract_identifier: REGISTRY,
        topic: 'print',
        raw_value: `0x${serializeCV(
          tupleCV({
            topic: stringAsciiCV('withdrawal-create'),
            'request-id': uintCV(nextId++),
            amount: uintCV(1000 + i),
            sender: principalCV(SENDER),
            'block-height': uintCV(burnHeight),
          }),
        )}`,
      },
    });
  return JSON.stringify({
    index_block_hash: hex(hash),
    parent_index_block_hash: hex(parent),
    block_height: height,
    burn_block_height: burnHeight,
    burn_block_hash: hex(burnHeight * 1000 + burn),
    events,
  });
}

const server = spawn(
  process.execPath,
  [
    'dist/cli.js',
    'serve',
    '--port',
    '0',
    '--no-metrics',
    '--data',
    mkdtempSync(join(tmpdir(), 'observer-')),
    '--stacks-observer',
    '127.0.0.1:0',
    '--stacks-history-complete',
    '--snapshot-every',
    '40000',
  ],
  { stdio: ['ignore', 'pipe', 'pipe'] },
);
// Compactions, as the server tells them (start and end times, in this process's clock).
const compactions = [];
server.stderr.on('data', (c) => {
  for (const line of String(c).split('\n')) {
    if (/compacting:/.test(line)) compactions.push({ from: performance.now(), to: Infinity });
    if (/compacted:/.test(line) && compactions.length > 0)
      compactions[compactions.length - 1].to = performance.now();
  }
});
const [url, service] = await new Promise((resolve) => {
  let out = '';
  server.stdout.on('data', (c) => {
    out += c;
    const m = /stacks observer on (\S+)/.exec(out);
    const l = /listening on (\S+)/.exec(out);
    if (m && l) resolve([m[1], l[1]]);
  });
});
const post = async (text) => {
  const r = await fetch(`${url}/new_block`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: text,
  });
  if (r.status !== 200) throw new Error(`${r.status} ${await r.text()}`);
  await r.arrayBuffer();
};

let hash = 1;
let height = 1;
let burnHeight = 800_000;
const rows = [];
async function rate(label, n, make) {
  const bodies = Array.from({ length: n }, make);
  const t = performance.now();
  for (const b of bodies) await post(b);
  const s = (performance.now() - t) / 1000;
  rows.push([label, `${(n / s).toFixed(0)} blocks/s`, `${((s / n) * 1000).toFixed(2)} ms a block`]);
}
await post(body(hash++, 0, height++, burnHeight));
await rate('empty blocks, the same burn height', 300, () =>
  body(hash++, hash - 2, height++, burnHeight),
);
await rate('empty blocks, a new burn height each', 300, () =>
  body(hash++, hash - 2, height++, ++burnHeight),
);
await rate('blocks of 100 withdrawal requests, a new burn height each', 100, () =>
  body(hash++, hash - 2, height++, ++burnHeight, 100),
);
// Forks of depth 3: three blocks of 100 requests each, then one off the block below them.
const forks = [];
for (let round = 0; round < 15; round++) {
  const base = hash - 1;
  for (let k = 0; k < 3; k++)
    await post(body(hash++, hash - 2, height + k, burnHeight + 1 + k, 100));
  const t = performance.now();
  await post(body(hash++, base, height, burnHeight + 1, 1, 1));
  forks.push(performance.now() - t);
  burnHeight += 1;
  height += 1;
}
forks.sort((a, b) => a - b);
rows.push([
  'a fork of depth 3 (300 requests orphaned), one block',
  `median ${forks[7].toFixed(1)} ms`,
  `max ${forks[14].toFixed(1)} ms`,
]);

// Answer times: a block of 10 requests at a new burn height each, one after another.
const q = (xs, p) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))];
function times(label, samples) {
  const s = [...samples].sort((a, b) => a - b);
  rows.push([
    label,
    `p50 ${q(s, 0.5).toFixed(1)} ms · p99 ${q(s, 0.99).toFixed(1)} ms`,
    `max ${s[s.length - 1].toFixed(1)} ms (${s.length} blocks)`,
  ]);
}
async function timed(n, requests) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const b = body(hash++, hash - 2, height++, ++burnHeight, requests);
    const t = performance.now();
    await post(b);
    out.push({ at: t, ms: performance.now() - t });
  }
  return out;
}
const quiet = await timed(200, 10);
times(
  'answers to a node, quiet',
  quiet.map((x) => x.ms),
);
const load = autocannon({ url: `${service}/limits`, connections: 16, duration: 30 });
await new Promise((r) => setTimeout(r, 500));
const loaded = await timed(300, 10);
load.stop();
times(
  'answers to a node, 16 connections reading GET /limits',
  loaded.map((x) => x.ms),
);
// About 200,000 withdrawals held (2016 burn heights of 100), compacted every 40,000 events.
const during = [];
for (let i = 0; i < 2100; i++) {
  const b = body(hash++, hash - 2, height++, ++burnHeight, 100);
  const t = performance.now();
  await post(b);
  const ms = performance.now() - t;
  if (compactions.some((c) => t <= c.to && t + ms >= c.from)) during.push(ms);
}
times(
  `answers to a node while a compaction runs (${compactions.length} compactions, up to 200,000 held)`,
  during,
);
server.kill();
console.log('| what | rate | per block |\n|---|---|---|');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
