#!/usr/bin/env node
// `npm run bench:http`: the service beside its floors, protocols B and C of the benchmark
// gate. The service is the command as an operator runs it (`peg-limits serve` on a data
// folder, its defaults: the request log on, written to a file). Each pair runs in
// interleaved rounds (autocannon, 16 connections, keep-alive, loopback only) and is judged
// by the median of the per-round ratios:
//   - C: POST /admin/events, one small withdrawal a request, ÷ a bare node:http server that
//     appends each body and answers once one fdatasync per group covers it
//     (bench/serve-child.mjs sync-floor);
//   - B: GET /limits ÷ a bare node:http server sending the same status, head and body.
// HTTP_SERVER=library runs `startServer` of bench/serve-child.mjs (no request log) instead.
// With --json prints one JSON line of { writes, reads } (ratio, and each side's req/s).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { encodeJson } from '../dist/index.js';
import {
  admin,
  LOAD_TOKEN,
  pair,
  startChild,
  startCommand,
  startFloor,
  withdrawalRequests,
} from './util.mjs';

const SECONDS = Number(process.env.HTTP_SECONDS ?? 3);
const ROUNDS = Number(process.env.HTTP_ROUNDS ?? 5);
const json = process.argv.includes('--json');
// HTTP_ONLY=writes or reads runs one of the two pairs (for profiling and trying changes).
const only = process.env.HTTP_ONLY;
const children = [];
const start = async (args) => (await startChild(args, children)).url;
const tmp = (name) => mkdtempSync(join(tmpdir(), `peg-limits-${name}-`));

const cannon = (options) => () => autocannon({ duration: SECONDS, connections: 16, ...options });

try {
  const ours =
    process.env.HTTP_SERVER === 'library'
      ? await start(['peg-limits', tmp('http')])
      : (
          await startCommand(['--data', tmp('http')], children, {
            PEG_LIMITS_ADMIN_TOKEN: LOAD_TOKEN,
          })
        ).url;
  await admin(ours, [{ type: 'blockConnected', height: 1 }], encodeJson);
  const syncFloor = await start(['sync-floor', tmp('floor')]);
  const write = (url) => cannon({ url: `${url}/admin/events`, requests: withdrawalRequests(1000) });
  const writes =
    only === 'reads' ? undefined : await pair(write(ours), write(syncFloor), true, ROUNDS);

  const bare = (await startFloor(await fetch(`${ours}/limits`), children)).url;
  const read = (url) => cannon({ url: `${url}/limits` });
  const reads = only === 'writes' ? undefined : await pair(read(ours), read(bare), true, ROUNDS);

  if (json) console.log(JSON.stringify({ writes, reads }));
  else {
    const row = (label, p) =>
      `| ${label} | ${p.a.rps.toFixed(0)} | ${p.b.rps.toFixed(0)} | ${p.ratio.toFixed(2)}× (${p.ratios.map((x) => x.toFixed(2)).join(', ')}) |`;
    console.log('| 16 connections, loopback | req/s | floor req/s | ratio (rounds) |');
    console.log('|---|---|---|---|');
    if (writes)
      console.log(row('POST /admin/events ÷ a bare server with one fdatasync per group', writes));
    if (reads) console.log(row('GET /limits ÷ a bare server sending the same bytes', reads));
  }
} finally {
  for (const c of children) c.kill('SIGKILL');
}
