#!/usr/bin/env node
// `npm run bench:compaction [-- --postgres]`: what a compaction costs the clients of a
// running server (protocol A of the benchmark gate). The command on a data folder with
// `--snapshot-every 100000` (or on PostgreSQL with a snapshot every 1,000 batches,
// COMPACTION_PG_EVERY) takes 600,000 withdrawals over 5,000 accounts (COMPACTION_BLOCKS
// blocks of 100 withdrawals a request, 10 by default; about 200,000 are held at the end: the
// history is 2016 blocks), while a second client reads GET /limits every 10 ms. Besides the
// figures below: the slowest read and write while any compaction runs (from the server's
// `compacting:` line to its `compacted:` line), the process's peak RSS (`VmHWM`) and its RSS
// after two full GCs at the end (the server runs with --expose-gc and bench/gc-on-signal.mjs;
// COMPACTION_NODE_FLAGS adds node flags of its own, `--heap-growing-percent=0` to run it
// without the command's cap on the heap's growth).
// Reports the longest the server's event loop was held (measured inside it), the slowest
// read and write as the clients saw them, their p99, and the server's peak RSS against its
// settled RSS (sampled from /proc every 20 ms; settled: after the run and a last
// compaction, once idle; the request lines go to a pipe that counts compactions). The
// times count from the end of the start-up: the first WARM withdrawals (20,000), streamed
// well before the first compaction, while the process loads its modules and compiles its
// code, and the first read and write are told apart (the slowest of each, and the longest
// hold, fall there). Beside the figures while a compaction runs, the same for the requests in a
// window of the same length just before each one that overlapped none: the same run's tails
// with no compaction. `COMPACTION_EVERY=100000000` runs the same stream with no compaction
// at all, the machine's own tails. Bounded: about a minute, loopback only.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgres } from './postgres.mjs';
import { LOAD_TOKEN } from './util.mjs';

const TOTAL = Number(process.env.COMPACTION_WITHDRAWALS ?? 600_000);
const PER_BLOCK = 100;
const BLOCKS = Number(process.env.COMPACTION_BLOCKS ?? 10);
const ACCOUNTS = 5_000;
const WARM = 20_000;

// `--postgres`: the log on a PostgreSQL server of its own (bench/postgres.mjs), where a
// snapshot is taken every N batches: 1,000 batches of 100 withdrawals are the 100,000
// withdrawals between two compactions of the data folder.
const onPostgres = process.argv.includes('--postgres');
const database = onPostgres ? await startPostgres() : undefined;
const store = onPostgres
  ? [
      '--store',
      await database.database('compaction'),
      '--snapshot-every',
      process.env.COMPACTION_PG_EVERY ?? '1000',
    ]
  : [
      '--data',
      mkdtempSync(join(tmpdir(), 'peg-limits-compaction-')),
      '--snapshot-every',
      process.env.COMPACTION_EVERY ?? '100000',
    ];
const child = spawn(
  'node',
  [
    ...(process.env.COMPACTION_NODE_FLAGS ?? '').split(' ').filter(Boolean),
    '--expose-gc',
    '--import',
    './bench/loop-delay.mjs',
    '--import',
    './bench/gc-on-signal.mjs',
    'dist/cli.js',
    'serve',
    '--port',
    '0',
    ...store,
  ],
  {
    env: { ...process.env, PEG_LIMITS_ADMIN_TOKEN: LOAD_TOKEN },
    stdio: ['ignore', 'pipe', 'pipe'],
  },
);
let compactions = 0;
// When each compaction ran, in this process's clock (Date.now()): from the server's
// `compacting:` line to its `compacted:` line.
const compacting = [];
let afterGc;
// The server's own figure: the longest its event loop was held (what it controls, apart
// from how the machine schedules the three processes).
// Each second's longest hold, with when that second began (bench/loop-delay.mjs).
const holds = [];
child.stdout.on('data', (c) => {
  for (const m of String(c).matchAll(/loop-delay max ([\d.]+) since (\d+)/g))
    holds.push({ ms: Number(m[1]), since: Number(m[2]) });
  const gc = /rss after gc (\d+)/.exec(String(c));
  if (gc) afterGc?.(Number(gc[1]) / 1024);
});
child.stderr.on('data', (c) => {
  for (const line of String(c).split('\n')) {
    if (/compacting:/.test(line))
      compacting.push({ from: Date.now(), to: Number.POSITIVE_INFINITY });
    if (/compacted:|snapshot \d+ written/.test(line)) {
      compactions++;
      const last = compacting.at(-1);
      if (last !== undefined && last.to === Number.POSITIVE_INFINITY) last.to = Date.now();
    }
  }
});
const url = await new Promise((resolve, reject) => {
  child.stdout.on('data', (c) => {
    const m = /listening on (\S+)/.exec(String(c));
    if (m) resolve(m[1]);
  });
  child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
});

const rssMiB = () => {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024;
};
let peak = 0;
const sampler = setInterval(() => {
  peak = Math.max(peak, rssMiB());
}, 20);

function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

// The reader runs in a process of its own, so that the writer's work never delays it.
const READER = `
  const reads = [];
  let stop = false;
  process.on('message', () => { stop = true; });
  (async () => {
    while (!stop) {
      const at = Date.now();
      const t = performance.now();
      const r = await fetch(process.argv[1] + '/limits');
      await r.text();
      reads.push([at, performance.now() - t]);
      await new Promise((r) => setTimeout(r, 10));
    }
    process.send(reads, () => process.exit(0));
  })();
`;
const reader = spawn('node', ['-e', READER, url], {
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
const reads = new Promise((resolve) => reader.once('message', resolve));

const writes = [];
let n = 0;
// When the start-up ends: the first WARM withdrawals are written.
let warmAt = Number.POSITIVE_INFINITY;
for (let height = 1; n < TOTAL; ) {
  if (n >= WARM && warmAt === Number.POSITIVE_INFINITY) warmAt = Date.now();
  const parts = [];
  for (let b = 0; b < BLOCKS && n < TOTAL; b++, height++) {
    parts.push(`{"type":"blockConnected","height":${height}}`);
    for (let i = 0; i < PER_BLOCK; i++, n++)
      parts.push(
        `{"type":"withdrawalRequested","id":"w${n}","account":"a${n % ACCOUNTS}","amount":1,"height":${height}}`,
      );
  }
  const body = `[${parts.join(',')}]`;
  const at = Date.now();
  const t = performance.now();
  const r = await fetch(`${url}/admin/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${LOAD_TOKEN}` },
    body,
  });
  await r.text();
  if (r.status !== 200) throw new Error(`write at height ${height}: ${r.status}`);
  writes.push([at, performance.now() - t]);
}
reader.send('stop');
const allReads = await reads;
// The times of the run after the start-up, and those of the start-up, by when each began.
const split = (timed) => [
  timed.filter(([at]) => at >= warmAt).map(([, ms]) => ms),
  timed.filter(([at]) => at < warmAt).map(([, ms]) => ms),
];
const [readTimes, startReads] = split(allReads);
const [writeTimes, startWrites] = split(writes);
// Whether a request overlapped a window (began before it ended, ended after it began), and
// the times of the requests that pass `keep`.
const overlaps = ([at, ms], w) => at <= w.to && at + ms >= w.from;
const inAny = (windows) => (request) => windows.some((w) => overlaps(request, w));
const timesOf = (timed, keep) => timed.filter(keep).map(([, ms]) => ms);
// The requests that overlapped a compaction.
const duringOne = inAny(compacting);
const readsDuring = timesOf(allReads, duringOne);
const writesDuring = timesOf(writes, duringOne);
// The same run's reference: the requests in a window of the same length just before each
// compaction (after the start-up) that overlapped no compaction (on a slow machine the
// window can reach back into the one before): the same minute on the same machine with no
// compaction running, so that what a compaction adds is told apart from the machine's own
// tails.
const inBefore = inAny(
  compacting
    .filter((c) => c.to !== Number.POSITIVE_INFINITY)
    .map((c) => ({ from: c.from - (c.to - c.from), to: c.from }))
    .filter((w) => w.from >= warmAt),
);
const beforeOne = (request) => inBefore(request) && !duringOne(request);
const readsBefore = timesOf(allReads, beforeOne);
const writesBefore = timesOf(writes, beforeOne);
const loopDelay = Math.max(0, ...holds.filter((h) => h.since >= warmAt).map((h) => h.ms));
const startHold = Math.max(0, ...holds.filter((h) => h.since < warmAt).map((h) => h.ms));
// Settled: once the last compaction is written and the server is idle.
await new Promise((r) => setTimeout(r, 3_000));
const settled = rssMiB();
clearInterval(sampler);
// The process's own peak (the kernel's high-water mark), and its RSS after two full GCs.
const hwm =
  Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]) / 1024;
const gcRss = await new Promise((resolve) => {
  afterGc = resolve;
  child.kill('SIGUSR2');
});
child.kill('SIGKILL');
database?.stop();

const f = (x) => `${x.toFixed(0)} ms`;

// `--json`: the figures the benchmark gate holds, as one line of JSON.
if (process.argv.includes('--json')) {
  console.log(
    JSON.stringify({
      compactions,
      loopDelay,
      slowestRead: Math.max(...readTimes),
      slowestWrite: Math.max(...writeTimes),
      peakRss: peak / settled,
      slowestReadDuring: Math.max(0, ...readsDuring),
      slowestWriteDuring: Math.max(0, ...writesDuring),
      readsDuring: readsDuring.length,
      writesDuring: writesDuring.length,
      slowestReadBefore: Math.max(0, ...readsBefore),
      slowestWriteBefore: Math.max(0, ...writesBefore),
      readsBefore: readsBefore.length,
      writesBefore: writesBefore.length,
      hwm,
      afterGc: gcRss,
      hwmRatio: hwm / gcRss,
      startUp: {
        loopDelay: startHold,
        slowestRead: Math.max(...startReads),
        slowestWrite: Math.max(...startWrites),
      },
    }),
  );
  process.exit(0);
}
console.log(
  [
    `| figure (${TOTAL} withdrawals streamed, ${ACCOUNTS} accounts, ${onPostgres ? 'PostgreSQL, a snapshot every 1,000 batches' : 'a data folder, --snapshot-every 100000'}, ${compactions} compactions) | value |`,
    '|---|---|',
    `| longest the server's event loop was held | ${f(loopDelay)} |`,
    `| slowest read (GET /limits every 10 ms, another process) | ${f(Math.max(...readTimes))} |`,
    `| read p99 | ${f(percentile(readTimes, 99))} |`,
    `| slowest write (${BLOCKS} blocks of ${PER_BLOCK} withdrawals) | ${f(Math.max(...writeTimes))} |`,
    `| write p99 | ${f(percentile(writeTimes, 99))} |`,
    `| the start-up apart (the first ${WARM} withdrawals, before any compaction): longest hold, slowest read, slowest write | ${f(startHold)}, ${f(Math.max(...startReads))}, ${f(Math.max(...startWrites))} |`,
    `| peak RSS ÷ settled RSS | ${(peak / settled).toFixed(2)}× (${peak.toFixed(0)} MiB ÷ ${settled.toFixed(0)} MiB) |`,
    `| while a compaction runs: slowest read, slowest write (${readsDuring.length} reads, ${writesDuring.length} writes) | ${f(Math.max(0, ...readsDuring))}, ${f(Math.max(0, ...writesDuring))} |`,
    `| just before each compaction, as long as it: slowest read, slowest write (${readsBefore.length} reads, ${writesBefore.length} writes) | ${f(Math.max(0, ...readsBefore))}, ${f(Math.max(0, ...writesBefore))} |`,
    `| peak RSS (VmHWM) ÷ RSS after two full GCs | ${(hwm / gcRss).toFixed(2)}× (${hwm.toFixed(0)} MiB ÷ ${gcRss.toFixed(0)} MiB) |`,
  ].join('\n'),
);
