#!/usr/bin/env node
/**
 * `npm run bench:http-profile`: where a server's time goes while it answers `GET /limits`
 * (protocol B's load: autocannon, 16 connections, 5 s), for the command as an operator runs
 * it (`peg-limits serve` on a data folder, the request log to a file) and for the bare
 * node:http server sending the same bytes. Each runs under `node --cpu-prof`; the samples'
 * self time is grouped: the socket write (`writev`), idle (the event loop waiting), other
 * work of node:http and node's streams, garbage collection, the file writes of the request
 * log (`writeBuffer`), and the project's own JavaScript (`dist/`). Loopback only.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { LOAD_TOKEN } from './util.mjs';

// A server under the profiler; resolves with its URL and a stop that returns its profile.
async function profiled(args) {
  const dir = mkdtempSync(join(tmpdir(), 'peg-limits-profile-'));
  const out = join(dir, 'output.log');
  const child = spawn(process.execPath, ['--cpu-prof', '--cpu-prof-dir', dir, ...args(dir)], {
    stdio: ['ignore', openSync(out, 'w'), openSync(out, 'a')],
    env: { ...process.env, PEG_LIMITS_ADMIN_TOKEN: LOAD_TOKEN },
  });
  let url;
  while (url === undefined) {
    await new Promise((r) => setTimeout(r, 20));
    url = /listening on (\S+)/.exec(readFileSync(out, 'utf8'))?.[1];
  }
  return {
    url,
    async stop() {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGINT');
      await gone;
      const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
      return JSON.parse(readFileSync(join(dir, file), 'utf8'));
    },
  };
}

const GROUPS = [
  [
    'the socket write (writev)',
    (f) => f.functionName === 'writev' || /writevGeneric/.test(f.functionName),
  ],
  ['idle', (f) => f.functionName === '(idle)'],
  ['garbage collection', (f) => f.functionName === '(garbage collector)'],
  ['the request log (writeBuffer)', (f) => f.functionName === 'writeBuffer'],
  ["the project's JavaScript (dist/)", (f) => /\/dist\//.test(f.url)],
  ['node:http, streams, the rest', () => true],
];

function shares(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const totals = new Map(GROUPS.map(([name]) => [name, 0]));
  let all = 0;
  profile.samples.forEach((id, i) => {
    const frame = byId.get(id).callFrame;
    const [name] = GROUPS.find(([, test]) => test(frame));
    const dt = profile.timeDeltas[i] ?? 0;
    totals.set(name, totals.get(name) + dt);
    all += dt;
  });
  return new Map([...totals].map(([k, v]) => [k, (100 * v) / all]));
}

// The head and body of an answer as a bare server must send them.
async function answerOf(url) {
  const r = await fetch(`${url}/limits`);
  const headers = {};
  for (const [k, v] of r.headers)
    if (!['date', 'connection', 'keep-alive', 'content-length'].includes(k)) headers[k] = v;
  return { status: r.status, headers, body: await r.text() };
}

async function measure(label, args) {
  const server = await profiled(args);
  const answer = await answerOf(server.url);
  await autocannon({ url: `${server.url}/limits`, duration: 1, connections: 16 });
  const run = await autocannon({ url: `${server.url}/limits`, duration: 5, connections: 16 });
  return { label, rps: run.requests.average, shares: shares(await server.stop()), answer };
}

const ours = await measure('peg-limits serve', (dir) => [
  'dist/cli.js',
  'serve',
  '--port',
  '0',
  '--data',
  join(dir, 'data'),
]);
const file = join(mkdtempSync(join(tmpdir(), 'peg-limits-answer-')), 'answer.json');
writeFileSync(file, JSON.stringify(ours.answer));
const bare = await measure('a bare node:http server', () => [
  'bench/serve-child.mjs',
  'floor',
  file,
]);

console.log(
  `| share of the samples (GET /limits, 16 connections, 5 s) | ${ours.label} | ${bare.label} |`,
);
console.log('|---|---|---|');
console.log(
  `| requests a second (under the profiler) | ${ours.rps.toFixed(0)} | ${bare.rps.toFixed(0)} |`,
);
for (const [name] of GROUPS)
  console.log(
    `| ${name} | ${ours.shares.get(name).toFixed(1)}% | ${bare.shares.get(name).toFixed(1)}% |`,
  );
