#!/usr/bin/env node
// Runs a build's command through a fixed script (usage, bad options, and a served log's
// answers) and prints everything it answered, with what differs from run to run (times,
// request ids, the audit hashes) written as placeholders. A restructuring that means to
// change no behaviour compares two builds:
//   node scripts/answers-probe.mjs dist/cli.js > after.txt   (and the same on the older build)
//   diff before.txt after.txt
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const cli = process.argv[2];
const out = [];
const run = (args, env = {}) => {
  const r = spawnSync('node', [cli, ...args], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  out.push(`$ ${args.join(' ')}\n[${r.status}]\n${r.stdout}${r.stderr.replace(/\d+ ms/g, 'N ms')}`);
};
run(['--help']);
run([]);
run(['nope']);
run(['serve', '--port', 'x']);
run(['serve', '--cors-origin', 'a/b']);
run(['serve', '--store', 'mysql://x']);
run(['serve', '--stacks-observer', '8.8.8.8:1']);
run(['audit']);
run(['migrate-journal']);
run(['serve', '--log-format', 'xml']);
run(['serve', '--snapshot-every', '0']);
run(['serve'], { PEG_LIMITS_ADMIN_TOKEN: 'short' });
run(['serve', '--alert-url', 'ftp://x']);
const dir = mkdtempSync(join(tmpdir(), 'probe-'));
const TOKEN = 'operator-token-0123456789abcdef';
const child = spawn('node', [cli, 'serve', '--port', '0', '--data', dir], {
  env: { ...process.env, PEG_LIMITS_ADMIN_TOKEN: TOKEN },
});
let url;
await new Promise((res) =>
  child.stdout.on('data', (d) => {
    const m = /listening on (\S+)/.exec(String(d));
    if (m) {
      url = m[1];
      res();
    }
  }),
);
const req = async (method, path, body, token) => {
  const r = await fetch(url + path, {
    method,
    headers: {
      ...(body ? { 'content-type': 'application/json' } : {}),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body,
  });
  const h = [...r.headers]
    .filter(
      ([k]) =>
        !['date', 'peg-limits-request-id', 'content-length', 'keep-alive', 'connection'].includes(
          k,
        ),
    )
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n');
  const text = (await r.text())
    .replace(/"(at|timestamp)":"[^"]*"/g, '"$1":"T"')
    .replace(/"requestId":"[^"]*"/g, '"requestId":"ID"')
    .replace(/"hash":"[0-9a-f]{64}"/g, '"hash":"H"');
  out.push(
    `> ${method} ${path} ${body ?? ''}\n${r.status}\n${h}\n${path === '/' ? text.length : text}`,
  );
};
await req('GET', '/limits');
await req('GET', '/window');
await req('GET', '/openapi.json');
await req('GET', '/');
await req('GET', '/limits/alice');
await req('GET', '/window/alice');
await req('GET', '/nope');
await req('PUT', '/limits');
await req('POST', '/admin/events', '{"type":"blockConnected","height":100}', TOKEN);
await req(
  'POST',
  '/admin/events',
  '[{"type":"limitsSet","limits":{"pegCap":1000,"perWithdrawalCap":10,"rollingWithdrawalBlocks":144,"rollingWithdrawalCap":100}}]',
  TOKEN,
);
await req(
  'POST',
  '/admin/events',
  '{"type":"withdrawalRequested","id":"w1","account":"alice","amount":7,"height":100}',
  TOKEN,
);
await req(
  'POST',
  '/admin/events',
  '{"type":"withdrawalRequested","id":"w1","account":"bob","amount":7,"height":100}',
  TOKEN,
);
await req('POST', '/admin/events', '{"type":"blockConnected","height":99999}', TOKEN);
await req('POST', '/admin/events', 'not json', TOKEN);
await req('POST', '/admin/events', '{}', 'wrong-token-0123456789abcdef');
await req('GET', '/limits');
await req('GET', '/window');
await req('GET', '/check/withdrawal?account=alice&amount=5');
await req('GET', '/check/withdrawal?account=alice&amount=50');
await req('GET', '/admin/changes', undefined, TOKEN);
await req('GET', '/admin/held', undefined, TOKEN);
await req('POST', '/admin/held/foo', '{}', TOKEN);
await req('GET', '/readyz');
await req('GET', '/healthz');
await req('POST', '/throttle', '{"name":"x","secret":"y"}');
await req('GET', '/admin/audit?limit=2', undefined, TOKEN);
await req('OPTIONS', '/limits');
child.kill('SIGTERM');
await new Promise((r) => child.on('exit', r));
process.stdout.write(out.join('\n----\n'));
