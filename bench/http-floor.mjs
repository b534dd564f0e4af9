#!/usr/bin/env node
// `npm run bench:http`: the service beside its floors, the two figures the benchmark gate
// holds. Each pair runs in interleaved rounds (autocannon, 16 connections, loopback only)
// and is judged by the median of the per-round ratios:
//   - POST /admin/events, one small withdrawal a request, on a data folder, ÷ a bare
//     node:http server that appends each body and answers once one fdatasync per group
//     covers it (bench/serve-child.mjs sync-floor);
//   - GET /limits ÷ a bare node:http server sending the same status, head and body.
// With --json prints one JSON line of { writes, reads } (ratio, and each side's req/s).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { encodeJson } from '../dist/index.js';
import { admin, startChild, withdrawalRequests } from './util.mjs';

const SECONDS = Number(process.env.HTTP_SECONDS ?? 3);
const ROUNDS = Number(process.env.HTTP_ROUNDS ?? 5);
const json = process.argv.includes('--json');
// HTTP_ONLY=writes or reads runs one of the two pairs (for profiling and trying changes).
const only = process.env.HTTP_ONLY;
const children = [];
const start = async (args) => (await startChild(args, children)).url;
const tmp = (name) => mkdtempSync(join(tmpdir(), `peg-limits-${name}-`));

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}

async function cannon(options, expected) {
  const res = await autocannon({ duration: SECONDS, connections: 16, ...options });
  if (res.errors > 0 || res.timeouts > 0 || res[expected] !== res.requests.total - res.non2xx)
    throw new Error(`${res.errors} errors, ${res.timeouts} timeouts, ${res.non2xx} not 2xx`);
  if (res.non2xx > 0) throw new Error(`${res.non2xx} answers not 2xx`);
  return res.requests.average;
}

// Alternating order round by round; the median of the per-round ratios a ÷ b.
async function pair(a, b) {
  const ratios = [];
  const rates = { a: [], b: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const first = r % 2 === 0;
    const x = first ? await a() : undefined;
    const y = await b();
    const z = first ? x : await a();
    rates.a.push(z);
    rates.b.push(y);
    ratios.push(z / y);
  }
  return { ratio: median(ratios), rps: median(rates.a), floorRps: median(rates.b), ratios };
}

// Headers as the floor must send them: what node:http adds itself left out.
function headersOf(response) {
  const headers = {};
  for (const [name, value] of response.headers)
    if (!['date', 'connection', 'keep-alive', 'content-length'].includes(name))
      headers[name] = value;
  return headers;
}

try {
  const ours = await start(['peg-limits', tmp('http')]);
  await admin(ours, [{ type: 'blockConnected', height: 1 }], encodeJson);
  const syncFloor = await start(['sync-floor', tmp('floor')]);
  const write = (url) => () =>
    cannon({ url: `${url}/admin/events`, requests: withdrawalRequests(1000) }, '2xx');
  const writes = only === 'reads' ? undefined : await pair(write(ours), write(syncFloor));

  const first = await fetch(`${ours}/limits`);
  const file = join(tmp('http'), 'limits.json');
  writeFileSync(
    file,
    JSON.stringify({ status: 200, headers: headersOf(first), body: await first.text() }),
  );
  const bare = await start(['floor', file]);
  const read = (url) => () => cannon({ url: `${url}/limits` }, '2xx');
  const reads = only === 'writes' ? undefined : await pair(read(ours), read(bare));

  if (json) console.log(JSON.stringify({ writes, reads }));
  else {
    const row = (label, p) =>
      `| ${label} | ${p.rps.toFixed(0)} | ${p.floorRps.toFixed(0)} | ${p.ratio.toFixed(2)}× (${p.ratios.map((x) => x.toFixed(2)).join(', ')}) |`;
    console.log('| 16 connections, loopback | req/s | floor req/s | ratio (rounds) |');
    console.log('|---|---|---|---|');
    if (writes)
      console.log(row('POST /admin/events ÷ a bare server with one fdatasync per group', writes));
    if (reads) console.log(row('GET /limits ÷ a bare server sending the same bytes', reads));
  }
} finally {
  for (const c of children) c.kill('SIGKILL');
}
