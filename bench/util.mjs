// What the benchmark scripts share: starting a server child process, and writing a figures
// table into README.md (or a page of docs/) between markers.
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median } from './harness.mjs';

/**
 * Starts `node bench/serve-child.mjs ...args`, keeps it in `children` (to kill at the end),
 * and resolves with its URL and how long it took to listen.
 */
export function startChild(args, children) {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn('node', ['bench/serve-child.mjs', ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    child.stdout.on('data', (c) => {
      const m = /listening on (\S+)/.exec(String(c));
      if (m) resolve({ url: m[1], ms: performance.now() - started, child });
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
}

/**
 * Starts the command as an operator runs it, `node dist/cli.js serve --port 0 ...args`, its
 * output (the request log included) going to a file as a service manager keeps it, not to
 * a pipe this process would have to read. Keeps it in `children`; resolves with its URL,
 * the process and the file. BENCH_NODE_FLAGS adds node flags of its own (for instance
 * `--heap-growing-percent=0`: the command without its cap on the heap's growth).
 */
export async function startCommand(args, children, env = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'peg-limits-command-'));
  const out = join(dir, 'output.log');
  const fd = openSync(out, 'w');
  const flags = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  const child = spawn(
    process.execPath,
    [...flags, 'dist/cli.js', 'serve', '--port', '0', ...args],
    {
      stdio: ['ignore', fd, fd],
      env: { ...process.env, ...env },
    },
  );
  children.push(child);
  let exited;
  child.once('exit', (code) => {
    exited = code;
  });
  for (let waited = 0; waited < 30_000; waited += 20) {
    const m = /listening on (\S+)/.exec(readFileSync(out, 'utf8'));
    if (m) return { url: m[1], child, output: out };
    if (exited !== undefined) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`the command did not listen: ${readFileSync(out, 'utf8').slice(-500)}`);
}

/** Writes `table` into `file` between `<!-- name:start -->` and `<!-- name:end -->`. */
export function writeReadmeTable(name, table, file = 'README.md') {
  const readme = readFileSync(file, 'utf8');
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const at = readme.indexOf(start);
  const until = readme.indexOf(end);
  if (at < 0 || until < 0) throw new Error(`${file} has no ${name} markers`);
  writeFileSync(file, `${readme.slice(0, at + start.length)}\n${table}\n${readme.slice(until)}`);
}

/** The operator token the benchmark servers run with. */
export const LOAD_TOKEN = 'load-token-of-22-characters';

/** Posts operator events; resolves with the log position the answer reflects. */
export async function admin(url, events, encode) {
  const r = await fetch(`${url}/admin/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${LOAD_TOKEN}` },
    body: encode(events),
  });
  if (r.status !== 200) throw new Error(`${r.status} ${await r.text()}`);
  return Number(r.headers.get('peg-limits-position'));
}

let withdrawals = 0;

/** An autocannon request list: each request a fresh withdrawal of `amount` at height 1. */
export function withdrawalRequests(amount) {
  return [
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${LOAD_TOKEN}` },
      setupRequest: (req) => ({
        ...req,
        body: `[{"type":"withdrawalRequested","id":"w${withdrawals++}","account":"a${withdrawals % 500}","amount":${amount},"height":1}]`,
      }),
    },
  ];
}

/** The head of an answer as a bare server must send it: what node:http adds itself left out. */
function headersOf(response) {
  const headers = {};
  for (const [name, value] of response.headers)
    if (!['date', 'connection', 'keep-alive', 'content-length'].includes(name))
      headers[name] = value;
  return headers;
}

/**
 * Starts the bare node:http server of `response` (bench/serve-child.mjs floor): every request
 * answered with its status, head and body. Resolves like {@link startChild}, with the body.
 */
export async function startFloor(response, children) {
  const body = await response.text();
  const file = join(mkdtempSync(join(tmpdir(), 'peg-limits-floor-')), 'answer.json');
  writeFileSync(
    file,
    JSON.stringify({ status: response.status, headers: headersOf(response), body }),
  );
  return { ...(await startChild(['floor', file], children)), body };
}

/**
 * Runs two autocannon contenders in alternating rounds; returns the median req/s, p50 and
 * p99 of each, the per-round ratios of req/s and their median (a shared machine drifts
 * between rounds far more than within one). Every answer must have the status the run
 * expects: a fast error is no figure.
 */
export async function pair(a, b, expect2xx, rounds) {
  const runs = { a: [], b: [] };
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? ['a', 'b'] : ['b', 'a'];
    for (const k of order) {
      const res = await (k === 'a' ? a : b)();
      if (res.errors > 0 || res.timeouts > 0)
        throw new Error(`${res.errors} errors, ${res.timeouts} timeouts`);
      if (expect2xx ? res.non2xx > 0 : res['2xx'] > 0)
        throw new Error(
          `${res.non2xx} answers not 2xx, ${res['2xx']} 2xx: not the status expected`,
        );
      runs[k].push(res);
    }
  }
  const sum = (rs) => ({
    rps: median(rs.map((x) => x.requests.average)),
    p50: median(rs.map((x) => x.latency.p50)),
    p99: median(rs.map((x) => x.latency.p99)),
  });
  const ratios = runs.a.map((x, i) => x.requests.average / runs.b[i].requests.average);
  return { a: sum(runs.a), b: sum(runs.b), ratio: median(ratios), ratios };
}
