#!/usr/bin/env node
// `npm run bench:http-cpu`: the server's own CPU time per `GET /limits`, beside the bare
// node:http server sending the same bytes (bench/serve-child.mjs floor). Each server takes
// the same fixed rate (autocannon, 16 connections, HTTP_CPU_RATE a second, 8,000 by default,
// under what either can serve) for 4 s in each of HTTP_CPU_ROUNDS interleaved rounds (8);
// its CPU time (user and system, from /proc) over the requests served is its cost per
// request. A figure that does not depend on how the client and the servers share the
// machine's cores, unlike a rate. Loopback only.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { median } from './harness.mjs';
import { startChild, startFloor } from './util.mjs';

const RATE = Number(process.env.HTTP_CPU_RATE ?? 8000);
const ROUNDS = Number(process.env.HTTP_CPU_ROUNDS ?? 8);
const children = [];
const tmp = (name) => mkdtempSync(join(tmpdir(), `peg-limits-${name}-`));

// The process's CPU time so far, in µs (fields 14 and 15 of /proc/PID/stat, in ticks of 10 ms).
function cpuMicros(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

async function perRequest({ url, child }) {
  const before = cpuMicros(child.pid);
  const run = await autocannon({
    url: `${url}/limits`,
    duration: 4,
    connections: 16,
    overallRate: RATE,
  });
  return (cpuMicros(child.pid) - before) / run.requests.total;
}

try {
  const ours = await startChild(['peg-limits', tmp('http-cpu')], children);
  const bare = await startFloor(await fetch(`${ours.url}/limits`), children);
  // Warm both (the JIT, the connections' first answers).
  for (const s of [ours, bare]) await autocannon({ url: `${s.url}/limits`, duration: 1 });
  const a = [];
  const b = [];
  for (let round = 0; round < ROUNDS; round++) {
    a.push(await perRequest(ours));
    b.push(await perRequest(bare));
  }
  const ratios = a.map((x, i) => x / b[i]);
  console.log(`| GET /limits at ${RATE}/s, 16 connections | server CPU a request |`);
  console.log('|---|---|');
  console.log(`| peg-limits | ${median(a).toFixed(1)} µs |`);
  console.log(`| a bare node:http server sending the same bytes | ${median(b).toFixed(1)} µs |`);
  console.log(
    `| ratio (median of per-round ratios) | ${median(ratios).toFixed(2)}× (${ratios.map((r) => r.toFixed(2)).join(', ')}) |`,
  );
} finally {
  for (const c of children) c.kill('SIGKILL');
}
