#!/usr/bin/env node
// `npm run bench:nginx`: GET /limits read through nginx's proxy_cache (the configuration of
// docs/operating.md, "Behind an HTTP cache", run as written by test/support/nginx.mjs) in
// front of `peg-limits serve --cache-max-age 1`, against the same reads straight to the
// server; and how many of the reads through nginx reached the server (its own request count,
// from GET /metrics). Interleaved rounds of autocannon (16 connections, loopback only),
// medians. Twice: a small state, and one with 10,000 account entries (a 1.77 MiB body).
// Needs Debian's nginx (apt-get install nginx-light). With --json prints one JSON line.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { encodeJson } from '../dist/index.js';
import { HAVE_NGINX, NGINX_MISSING, startNginx } from '../test/support/nginx.mjs';
import { median } from './harness.mjs';
import { admin, LOAD_TOKEN } from './util.mjs';

if (!HAVE_NGINX) {
  console.error(`bench:nginx needs nginx: ${NGINX_MISSING}`);
  process.exit(2);
}
const SECONDS = Number(process.env.NGINX_SECONDS ?? 3);
const ROUNDS = Number(process.env.NGINX_ROUNDS ?? 3);

async function serve() {
  const child = spawn(
    'node',
    [
      'dist/cli.js',
      'serve',
      '--port',
      '0',
      '--quiet',
      '--cache-max-age',
      '1',
      '--data',
      mkdtempSync(join(tmpdir(), 'peg-limits-nginx-bench-')),
    ],
    {
      env: { ...process.env, PEG_LIMITS_ADMIN_TOKEN: LOAD_TOKEN },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const url = await new Promise((resolve, reject) => {
    child.stdout.on('data', (c) => {
      const m = /listening on (\S+)/.exec(String(c));
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`the server exited with ${code}`)));
  });
  return { url, child };
}

// What reached the server at /limits so far (its own count).
async function served(url) {
  const text = await (await fetch(`${url}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^peg_limits_http_requests_total\{([^}]*)\} (\d+)/gm))
    if (m[1].includes('route="/limits"')) n += Number(m[2]);
  return n;
}

const read = (url) => autocannon({ url: `${url}/limits`, connections: 16, duration: SECONDS });

async function measure(label, entries) {
  const server = await serve();
  const nginx = await startNginx(new URL(server.url).host);
  try {
    if (entries > 0) {
      const accountCaps = {};
      for (let i = 0; i < entries; i++)
        accountCaps[`account-${i}`] = { pegCap: 5_000_000_000n + BigInt(i) };
      await admin(server.url, [{ type: 'limitsUpdated', limits: { accountCaps } }], encodeJson);
    }
    const bytes = (await (await fetch(`${server.url}/limits`)).text()).length;
    const direct = [];
    const cached = [];
    const reached = [];
    for (let r = 0; r < ROUNDS; r++) {
      const d = await read(server.url);
      const before = await served(server.url);
      const c = await read(nginx.url);
      reached.push(((await served(server.url)) - before) / SECONDS);
      if (d.non2xx > 0 || c.non2xx > 0) throw new Error('an answer was not 2xx');
      direct.push(d.requests.average);
      cached.push(c.requests.average);
    }
    return {
      label,
      bytes,
      direct: median(direct),
      nginx: median(cached),
      reachedPerSecond: median(reached),
    };
  } finally {
    nginx.stop();
    server.child.kill('SIGKILL');
  }
}

const rows = [await measure('small state', 0), await measure('10,000 account entries', 10_000)];
if (process.argv.includes('--json')) console.log(JSON.stringify(rows));
else {
  console.log(
    '| GET /limits, 16 connections, loopback | body | straight to the server | through nginx | of those, reaching the server |',
  );
  console.log('|---|---|---|---|---|');
  for (const r of rows)
    console.log(
      `| ${r.label} | ${(r.bytes / 1024).toFixed(r.bytes > 1024 * 1024 ? 0 : 1)} KiB | ${r.direct.toFixed(0)}/s | ${r.nginx.toFixed(0)}/s | ${r.reachedPerSecond.toFixed(1)}/s |`,
    );
}
