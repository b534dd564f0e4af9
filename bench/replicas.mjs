#!/usr/bin/env node
// `npm run bench:replicas`: figures of replicas over one PostgreSQL, on loopback and a
// private server started here (Debian's binaries): accepted operator changes per second
// through one replica and spread over three, the lag from a commit on one replica to the
// change being visible on another, reads through another replica right after a write
// (with and without Peg-Limits-Min-Position), start-up from a snapshot with 100k
// withdrawals, and (on Linux, from /proc) the CPU each accepted change costs the replicas,
// PostgreSQL and the load together, with how long the replicas and PostgreSQL waited for a
// core, through one of three and spread over three. Writes through one replica alone,
// through one of three, through HAProxy in front of three (docs/replicas.md's
// configuration; left out without haproxy) and spread over three are interleaved in ROUNDS
// rounds (3) of LOAD_SECONDS (4) with CONNECTIONS (16) writers, each after WARM_SECONDS (3)
// of writes spread over the same replicas (the alone one: to it), so that what is measured
// runs compiled, as in a deployment that has run for a while, and each followed on the same
// replicas by a run at a steady OFFERED (1500) changes a second (open loop: latency at a
// load both keep up with); PG_EXTRA adds server settings (`-c name=value`). With --readme,
// writes the table into docs/replicas.md; with --check, exits 1 unless the spread rate is
// ≥ 0.9× the rate through one of three, nothing is refused, and every read that named its
// write saw it.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { applyAll, createLimitsState, encodeJson, snapshotOf } from '../dist/index.js';
import { haproxyConfig } from '../test/support/doc-blocks.mjs';
import { startPostgres } from './postgres.mjs';
import { admin as adminEvents, startChild, withdrawalRequests, writeReadmeTable } from './util.mjs';

const SECONDS = Number(process.env.LOAD_SECONDS ?? 4);
const postgres = await startPostgres();
// HAProxy's configuration files go here.
const dir = mkdtempSync(join(tmpdir(), 'peg-limits-replicas-'));
const children = [];
const database = (name) => postgres.database(name);

const replica = (url) => startChild(['replica', url], children);

// CPU time from /proc (Linux; the row is left out elsewhere): the seconds a process has run,
// user and system, and every PostgreSQL process's, so that a run's cores can be shared out
// among the replicas, the database and this process (the load). With them the seconds a
// process's main thread (a replica's event loop) spent ready to run but waiting for a core
// (`schedstat`; 0 where the kernel does not keep it): what a machine whose cores are busy
// adds to every trip between processes.
const PROC = existsSync('/proc/self/stat');
const HZ = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })) || 100;
  } catch {
    return 100;
  }
})();
const cpuSeconds = (pid) => {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) / HZ;
  } catch {
    return 0; // gone
  }
};
const waitSeconds = (pid) => {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e9 || 0;
  } catch {
    return 0; // gone, or no schedstat
  }
};
const usage = (pid) => ({ cpu: cpuSeconds(pid), wait: waitSeconds(pid) });
const postgresUsage = () => {
  const by = new Map();
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') by.set(pid, usage(pid));
    } catch {}
  }
  return by;
};
// What `nodes` (replicas), PostgreSQL and this process have run so far; `cpuSpent(before,
// nodes, rate)` turns `before` and now into cores, CPU per accepted change, and the seconds
// a second the replicas and the database waited for a core.
const cpuNow = (nodes) =>
  PROC
    ? {
        at: performance.now(),
        replicas: nodes.map((n) => usage(n.child.pid)),
        database: postgresUsage(),
        load: cpuSeconds(process.pid),
      }
    : undefined;
const cpuSpent = (before, nodes, rate) => {
  const after = cpuNow(nodes);
  if (before === undefined || after === undefined) return undefined;
  const seconds = (after.at - before.at) / 1000;
  const database = { cpu: 0, wait: 0 };
  for (const [pid, u] of after.database) {
    const b = before.database.get(pid) ?? { cpu: 0, wait: 0 };
    database.cpu += u.cpu - b.cpu;
    database.wait += u.wait - b.wait;
  }
  const replicas = after.replicas.map((u, i) => (u.cpu - before.replicas[i].cpu) / seconds);
  const replicasWaited =
    after.replicas.reduce((t, u, i) => t + u.wait - before.replicas[i].wait, 0) / seconds;
  const cores = {
    replicas,
    database: database.cpu / seconds,
    load: (after.load - before.load) / seconds,
  };
  const all = replicas.reduce((t, c) => t + c, 0) + cores.database + cores.load;
  const waited = { replicas: replicasWaited, database: database.wait / seconds };
  return { ...cores, all, perChange: (all / rate) * 1e6, waited };
};

// HAProxy in front of three replicas, with the configuration of docs/replicas.md (changes
// to the first, reads to all), its addresses replaced by theirs and a free port.
const HAPROXY = '/usr/sbin/haproxy';
const haproxy = existsSync(HAPROXY);
if (!haproxy) console.error(`no ${HAPROXY} (apt-get install haproxy): no row through HAProxy`);
const freePort = () =>
  new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
async function balancer(three) {
  const port = await freePort();
  const config = join(dir, `haproxy-${port}.cfg`);
  writeFileSync(
    config,
    haproxyConfig(
      readFileSync('docs/replicas.md', 'utf8'),
      port,
      three.map((r) => r.url.replace('http://', '')),
    ),
  );
  const child = spawn(HAPROXY, ['-db', '-f', config], { stdio: 'ignore' });
  children.push(child);
  const url = `http://127.0.0.1:${port}`;
  for (const until = Date.now() + 10_000; ; ) {
    const r = await fetch(`${url}/healthz`).catch(() => undefined);
    if (r?.ok) break;
    if (Date.now() > until) throw new Error(`HAProxy did not answer on ${url} within 10 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return { url, child };
}

const admin = (url, events) => adminEvents(url, events, encodeJson);

// Closed loop (each connection sends its next change once answered) unless `rate` is given:
// then that many changes a second in all, sent on time whatever the answers do (open loop;
// autocannon corrects the latencies for changes sent late).
function writes(url, connections, rate, seconds = SECONDS) {
  return autocannon({
    url: `${url}/admin/events`,
    duration: seconds,
    connections,
    requests: withdrawalRequests(1),
    ...(rate === undefined ? {} : { overallRate: rate }),
  });
}

const rows = [];
let ratio = 0;
let refusedSpread = 0;
let staleAsked = 0;
const ROUNDS = Number(process.env.ROUNDS ?? 3);
// Writes before each measured run: V8 compiles a replica's write path in its first seconds
// of writes (on threads of its own), and spread over three, three replicas compile it at
// once inside the run (docs/notes/write-sharing.md, "Warm replicas").
const WARM_SECONDS = Number(process.env.WARM_SECONDS ?? 3);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 16);
const OFFERED = Number(process.env.OFFERED ?? 1500);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
try {
  // Four contenders, interleaved in rounds on fresh databases (the order turns each round):
  // writes through one replica running alone; through one of three (the two others follow
  // every row, as in a deployment of three: the baseline of the ratio); through HAProxy in
  // front of three (when it is installed); and spread over the three (16 connections:
  // 6 + 5 + 5). The ratios are per round.
  const alone = [];
  const one = [];
  const spread = [];
  const viaBalancer = [];
  let nodes;
  const stop = (started) => {
    for (const n of started) {
      children.splice(children.indexOf(n.child), 1);
      n.child.kill('SIGKILL');
    }
  };
  const summary = (runs) => {
    const total = runs.reduce((sum, r) => sum + r.requests.average, 0);
    const refused = runs.reduce((sum, r) => sum + r.non2xx + r.errors, 0);
    const answered = runs.reduce((sum, r) => sum + r.requests.total, 0);
    // Latencies over several runs: autocannon's histograms are per run; take the worst p99
    // and the middle p50.
    return {
      rate: total * (1 - refused / Math.max(1, answered)),
      refused,
      p50: median(runs.map((r) => r.latency.p50)),
      p99: Math.max(...runs.map((r) => r.latency.p99)),
    };
  };
  // A replica's write-lock figures, from its GET /metrics (running totals).
  const lockFigures = async (url) => {
    const text = await (await fetch(`${url}/metrics`)).text();
    const read = (name) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    return {
      transactions: read('peg_limits_write_transactions_total'),
      waited: read('peg_limits_write_lock_wait_seconds_total'),
      held: read('peg_limits_write_lock_held_seconds_total'),
    };
  };
  // Summed over `nodes`, from `before` (figures of each) to now.
  const lockSpent = async (nodes, before) => {
    const after = await Promise.all(nodes.map((n) => lockFigures(n.url)));
    const sum = (k) => after.reduce((t, f, i) => t + f[k] - before[i][k], 0);
    return { transactions: sum('transactions'), waited: sum('waited'), held: sum('held') };
  };
  // Writes spread over `three`: the connections (and the open-loop rate, if given) shared out
  // as evenly as they divide (16 connections: 6 + 5 + 5).
  const part = (total, i) => Math.floor(total / 3) + (i < total % 3 ? 1 : 0);
  const spreadWrites = async (three, rate, seconds) =>
    summary(
      await Promise.all(
        three.map((r, i) =>
          writes(
            r.url,
            part(CONNECTIONS, i),
            rate === undefined ? undefined : part(rate, i),
            seconds,
          ),
        ),
      ),
    );
  const locks = { one: [], spread: [] };
  // CPU over the same runs (from /proc; none elsewhere).
  const cpu = { one: [], spread: [] };
  // The same replicas at a steady OFFERED changes a second (open loop), after the runs above.
  const offered = { one: [], spread: [] };
  // Three replicas on a fresh database, its first block written, warmed by writes spread
  // over them (the same for every contender).
  const threeReplicas = async (name) => {
    const db = await database(name);
    const three = [await replica(db), await replica(db), await replica(db)];
    await admin(three[0].url, [{ type: 'blockConnected', height: 1 }]);
    if (WARM_SECONDS > 0) await spreadWrites(three, undefined, WARM_SECONDS);
    return three;
  };
  const contenders = [
    async (round) => {
      const a = await replica(await database(`alone${round}`));
      await admin(a.url, [{ type: 'blockConnected', height: 1 }]);
      if (WARM_SECONDS > 0) await writes(a.url, CONNECTIONS, undefined, WARM_SECONDS);
      alone.push(summary([await writes(a.url, CONNECTIONS)]));
      stop([a]);
    },
    async (round) => {
      const three = await threeReplicas(`one${round}`);
      const before = await Promise.all(three.map((n) => lockFigures(n.url)));
      const cpuBefore = cpuNow(three);
      one.push(summary([await writes(three[0].url, CONNECTIONS)]));
      cpu.one.push(cpuSpent(cpuBefore, three, one.at(-1).rate));
      locks.one.push(await lockSpent(three, before));
      offered.one.push(summary([await writes(three[0].url, CONNECTIONS, OFFERED)]));
      stop(three);
    },
    async (round) => {
      if (!haproxy) return;
      const three = await threeReplicas(`balanced${round}`);
      const front = await balancer(three);
      viaBalancer.push(summary([await writes(front.url, CONNECTIONS)]));
      stop([front, ...three]);
    },
    async (round, last) => {
      const three = await threeReplicas(`three${round}`);
      const before = await Promise.all(three.map((n) => lockFigures(n.url)));
      const cpuBefore = cpuNow(three);
      spread.push(await spreadWrites(three));
      cpu.spread.push(cpuSpent(cpuBefore, three, spread.at(-1).rate));
      locks.spread.push(await lockSpent(three, before));
      offered.spread.push(await spreadWrites(three, OFFERED));
      // The last round's three serve the read and lag figures below.
      if (last) nodes = three;
      else stop(three);
    },
  ];
  for (let round = 0; round < ROUNDS; round++) {
    const last = round === ROUNDS - 1;
    // The spread run goes last in the last round; before that the order turns.
    const n = contenders.length;
    const order = contenders.map((_, j) => (last ? j : (round + j) % n));
    for (const k of order) await contenders[k](round, last);
  }
  const ratios = one.map((o, i) => spread[i].rate / o.rate);
  const fmt = (runs) =>
    `${median(runs.map((r) => r.rate)).toFixed(0)} (p50 ${median(runs.map((r) => r.p50))} ms, p99 ${median(runs.map((r) => r.p99))} ms; ${runs.reduce((n, r) => n + r.refused, 0)} refused)`;
  rows.push([
    `accepted changes/s, one replica running alone, ${CONNECTIONS} connections (median of ${ROUNDS} rounds)`,
    fmt(alone),
  ]);
  rows.push([
    `accepted changes/s, through one of three replicas, ${CONNECTIONS} connections (median of ${ROUNDS} rounds)`,
    fmt(one),
  ]);
  rows.push([
    `accepted changes/s, spread over three replicas, ${CONNECTIONS} connections (median of ${ROUNDS} rounds)`,
    fmt(spread),
  ]);
  if (viaBalancer.length > 0) {
    const through = one.map((o, i) => viaBalancer[i].rate / o.rate);
    rows.push([
      `accepted changes/s, through HAProxy to one of three replicas (docs/replicas.md), ${CONNECTIONS} connections (median of ${ROUNDS} rounds)`,
      `${fmt(viaBalancer)}; ${median(through).toFixed(2)}× the rate through one directly`,
    ]);
  }
  rows.push([
    'spread over three ÷ through one of three, median of the per-round ratios',
    `${median(ratios).toFixed(2)}× (rounds: ${ratios.map((r) => r.toFixed(2)).join(', ')})`,
  ]);
  // Where the time of the write lock goes (GET /metrics of each replica, summed over the
  // three): the share of the run it was held, and a transaction's mean wait and hold.
  const lockRow = (runs) => {
    const share = median(runs.map((l) => l.held / SECONDS));
    const hold = median(runs.map((l) => (l.held / l.transactions) * 1000));
    const wait = median(runs.map((l) => (l.waited / l.transactions) * 1000));
    const count = median(runs.map((l) => l.transactions / SECONDS));
    return `held ${(share * 100).toFixed(0)}% of the run (each replica's holds timed by it, from the lock's answer to the commit's, and summed, so they can overlap); ${count.toFixed(0)} transactions/s, each waiting ${wait.toFixed(2)} ms for the lock and holding it ${hold.toFixed(2)} ms`;
  };
  const offeredRow = (runs) =>
    `${median(runs.map((r) => r.rate)).toFixed(0)} accepted/s, p50 ${median(runs.map((r) => r.p50))} ms, p99 ${median(runs.map((r) => r.p99))} ms; ${runs.reduce((n, r) => n + r.refused, 0)} refused`;
  rows.push([
    `${OFFERED} changes/s offered through one of three (open loop, medians of the rounds)`,
    offeredRow(offered.one),
  ]);
  rows.push([
    `${OFFERED} changes/s offered spread over three (open loop, medians of the rounds)`,
    offeredRow(offered.spread),
  ]);
  rows.push(['the write lock, through one of three (medians of the rounds)', lockRow(locks.one)]);
  rows.push(['the write lock, spread over three (medians of the rounds)', lockRow(locks.spread)]);
  // Where the cores went (from /proc): CPU per accepted change, and the cores of each part,
  // in the round whose CPU per change is the median.
  const cpuRow = (runs) => {
    const r = [...runs].sort((a, b) => a.perChange - b.perChange)[Math.floor(runs.length / 2)];
    const cores = (x) => x.toFixed(2);
    const waited =
      r.waited.replicas > 0
        ? `; ready to run but waiting for a core: the replicas' event loops ${cores(r.waited.replicas)} s a second, PostgreSQL's processes ${cores(r.waited.database)}`
        : '';
    return `${r.perChange.toFixed(0)} µs of CPU per accepted change; cores: replicas ${r.replicas.map(cores).join(' + ')}, PostgreSQL ${cores(r.database)}, the load ${cores(r.load)} (${cores(r.all)} of ${availableParallelism()})${waited}`;
  };
  if (cpu.one.every(Boolean) && cpu.spread.every(Boolean) && cpu.one.length > 0) {
    rows.push(['CPU, through one of three (the median round)', cpuRow(cpu.one)]);
    rows.push(['CPU, spread over three (the median round)', cpuRow(cpu.spread)]);
  }
  ratio = median(ratios);
  refusedSpread = spread.reduce((n, r) => n + r.refused, 0);

  // Read your writes: a write through one replica, then a read through another at once.
  let stale = 0;
  let staleWithHeader = 0;
  for (let i = 0; i < 100; i++) {
    const position = await admin(nodes[0].url, [
      { type: 'peggedTotalObserved', total: BigInt(1000 + i) },
    ]);
    const plain = await fetch(`${nodes[1].url}/limits`);
    await plain.arrayBuffer();
    if (Number(plain.headers.get('peg-limits-position')) < position) stale++;
    const asked = await fetch(`${nodes[2].url}/limits`, {
      headers: { 'peg-limits-min-position': String(position) },
    });
    await asked.arrayBuffer();
    if (asked.status !== 200 || Number(asked.headers.get('peg-limits-position')) < position)
      staleWithHeader++;
  }
  staleAsked = staleWithHeader;
  rows.push([
    'a read through another replica right after a write (100 writes): older than the write',
    `${stale} without Peg-Limits-Min-Position, ${staleWithHeader} with it`,
  ]);

  // The lag from a commit on one replica to the change being visible on another.
  const lags = [];
  for (let i = 0; i < 200; i++) {
    const position = await admin(nodes[0].url, [
      { type: 'peggedTotalObserved', total: BigInt(i + 1) },
    ]);
    const t = performance.now();
    for (;;) {
      const r = await fetch(`${nodes[1].url}/limits`);
      await r.arrayBuffer();
      if (Number(r.headers.get('peg-limits-position')) >= position) break;
    }
    lags.push(performance.now() - t);
  }
  lags.sort((x, y) => x - y);
  rows.push([
    'lag, commit on one replica to visible on another (200 changes)',
    `median ${lags[100].toFixed(1)} ms, p99 ${lags[198].toFixed(1)} ms`,
  ]);

  // Start-up from a snapshot with 100k withdrawals held.
  const big = await database('big');
  const events = [];
  let id = 0;
  for (let b = 0; b < 2000; b++) {
    events.push({ type: 'blockConnected', height: 800_000 + b });
    for (let i = 0; i < 50; i++)
      events.push({
        type: 'withdrawalRequested',
        id: `s${id++}`,
        account: `a${id % 5000}`,
        amount: 1n,
        height: 800_000 + b,
      });
  }
  const state = applyAll(
    createLimitsState({
      limits: { rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: 10n ** 15n },
    }),
    events,
  ).state;
  const c = new pg.Client({ connectionString: big });
  await c.connect();
  const first = await replica(big); // creates the schema and snapshot 0
  children.pop().kill('SIGKILL');
  await c.query('INSERT INTO peg_limits_snapshots (seq, snapshot) VALUES (1, $1)', [
    encodeJson(snapshotOf(state)),
  ]);
  await c.end();
  void first;
  const started = await replica(big);
  rows.push([
    'start-up from a snapshot with 100,000 withdrawals held (to "listening")',
    `${started.ms.toFixed(0)} ms`,
  ]);
} finally {
  for (const child of children) child.kill('SIGKILL');
  try {
    postgres.stop();
  } catch {}
  rmSync(dir, { recursive: true, force: true });
}

const table = [
  '| replicas on PostgreSQL (loopback, Unix socket) | figure |',
  '|---|---|',
  ...rows.map(([l, v]) => `| ${l} | ${v} |`),
].join('\n');
console.log(table);
if (process.argv.includes('--readme')) writeReadmeTable('replicas', table, 'docs/replicas.md');
// The bars of issue 17: spread ≥ 0.9× one, nothing refused, every read asked for its write.
if (process.argv.includes('--check')) {
  const failures = [];
  if (ratio < 0.9)
    failures.push(`spread over three is ${ratio.toFixed(2)}× through one of three (bar 0.9×)`);
  if (refusedSpread > 0) failures.push(`${refusedSpread} writes refused spread over three`);
  if (staleAsked > 0) failures.push(`${staleAsked} reads with Peg-Limits-Min-Position were older`);
  if (failures.length > 0) {
    console.error(failures.join('\n'));
    process.exitCode = 1;
  }
}
