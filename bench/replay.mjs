#!/usr/bin/env node
/**
 * Protocol D, replay (`npm run bench:replay`): `applyAll` of a long history (11,800 blocks
 * of 16 withdrawals over 500 accounts, 1 in 100 rejected in the next block, the global
 * window cap moved every 50 blocks, an account given its own window every 400 blocks and the
 * one before it losing its entry) against a mutable reference doing the same bookkeeping
 * with plain maps and arrays (bench/workload.mjs, `MutableFloor`). Each process runs the
 * two interleaved, five warm-up rounds uncounted, then REPLAY_ROUNDS rounds; its figure is
 * the median of the per-round ratios; the figure is the median of three fresh processes.
 * The answers of both are compared after the timing. `--child` is one process, printing
 * one JSON line `{ ratio, library, reference }` (ms, medians).
 */
import { spawnSync } from 'node:child_process';
import { median } from './harness.mjs';

const PROCESSES = 3;

async function child() {
  const { applyAll, createLimitsState, getLimits, windowOf } = await import('../dist/index.js');
  const { interleave, medianRatio } = await import('./harness.mjs');
  const { history, HISTORY, limitsFor, MutableFloor } = await import('./workload.mjs');
  const accounts = 500;
  const rounds = Number(process.env.REPLAY_ROUNDS ?? 21);
  const { events, moved } = history({ blocks: 11_800, perBlock: 16, accounts });
  const build = () => {
    const r = applyAll(
      createLimitsState({ historyBlocks: HISTORY, limits: limitsFor(accounts) }),
      events,
    );
    if (!r.ok) throw r.error;
    return r.state;
  };
  const reference = () => {
    const floor = new MutableFloor(accounts);
    for (const e of events) floor.apply(e);
    return floor;
  };
  const times = interleave(
    [
      { name: 'library', run: build, calls: 1 },
      { name: 'reference', run: reference, calls: 1 },
    ],
    { rounds, warmup: 5, collect: true },
  );
  // The same answers: the global room, and the own window of the account that has one last.
  const state = build();
  const floor = reference();
  const a = [getLimits(state).availableToWithdraw, windowOf(state, moved)?.withdrawn];
  const b = [floor.available(), floor.ownWithdrawn(moved)];
  if (a[0] !== b[0] || a[1] !== b[1])
    throw new Error(`replay: the library says ${a}, the reference ${b}`);
  console.log(
    JSON.stringify({
      events: events.length,
      ratio: medianRatio(times.library, times.reference),
      library: median(times.library),
      reference: median(times.reference),
    }),
  );
}

if (process.argv.includes('--child')) await child();
else {
  const runs = [];
  for (let p = 0; p < PROCESSES; p++) {
    const r = spawnSync(process.execPath, ['--expose-gc', 'bench/replay.mjs', '--child'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    if (r.status !== 0) process.exit(r.status ?? 1);
    runs.push(JSON.parse(r.stdout.trim().split('\n').pop()));
  }
  const result = {
    events: runs[0].events,
    ratio: median(runs.map((r) => r.ratio)),
    ratios: runs.map((r) => r.ratio),
    library: median(runs.map((r) => r.library)),
    reference: median(runs.map((r) => r.reference)),
  };
  if (process.argv.includes('--json')) console.log(JSON.stringify(result));
  else
    console.log(
      `replay of ${result.events} events: applyAll ${result.library.toFixed(0)} ms, the mutable reference ${result.reference.toFixed(0)} ms: ${result.ratio.toFixed(2)}× (processes: ${result.ratios.map((x) => x.toFixed(2)).join(', ')})`,
    );
}
