#!/usr/bin/env node
/**
 * The core against a floor that books only the global window, as a service without account
 * windows does (no per-account sums): the replay and a chain of single applies. Run in a
 * process of its own: a second floor class in the same process as the gated cases shifts
 * their ratios (the JIT specialises the floor for one and then the other). Prints one JSON
 * object: `{ rows: [{ label, ratio, bar }] }`. Both rows are gated: the replay at 1.8×, the
 * chain at 5×. The replay counts 31 rounds after five of warm-up (fifteen until one
 * round's ratio was seen to range 0.65–2.45× on a shared machine): V8 is still
 * optimizing the library's longer code path through the first four or five runs of a fresh
 * process (58 functions in the first, then 6, 4, 1, 3, none after), and a median over nine
 * rounds after two of warm-up straddled that: 1.37–1.92× from run to run, 1.34–1.46× after.
 */
import { apply, applyAll, createLimitsState, getLimits } from '../dist/index.js';
import { interleave, medianRatio } from './harness.mjs';
import { applyEach, chainWorkload, HISTORY, limitsFor, MutableFloor, stream } from './workload.mjs';

const quick = process.argv.includes('--quick');
const ROUNDS = quick ? 5 : 9;
const REPLAY_ROUNDS = quick ? 7 : 31;
const REPLAY_WARMUP = 5;
const accounts = 500;
const rows = [];

function build(events) {
  const r = applyAll(
    createLimitsState({ historyBlocks: HISTORY, limits: limitsFor(accounts) }),
    events,
  );
  if (!r.ok) throw r.error;
  return r.state;
}

function floorOf(events) {
  const floor = new MutableFloor(accounts, { ownWindows: false });
  for (const e of events) floor.apply(e);
  return floor;
}

{
  const { events } = stream({ blocks: 11_800, perBlock: 16, accounts });
  const times = interleave(
    [
      { name: 'applyAll', run: () => build(events), calls: 1 },
      { name: 'global floor', run: () => floorOf(events), calls: 1 },
    ],
    { rounds: REPLAY_ROUNDS, warmup: REPLAY_WARMUP, collect: true },
  );
  // Compared after the timing (see bench/core.mjs).
  if (getLimits(build(events)).availableToWithdraw !== floorOf(events).available())
    throw new Error('replay: the library and the global-window floor disagree');
  rows.push({
    label: `replay of ${events.length} events ÷ a floor that books only the global window`,
    ratio: medianRatio(times.applyAll, times['global floor']),
    bar: 1.8,
  });
}

{
  const { base, chain } = chainWorkload(accounts);
  const state = build(base);
  const runChain = () => applyEach(apply, state, chain);
  const times = interleave(
    [
      { name: 'apply chain', run: runChain, calls: chain.length },
      {
        name: 'global floor chain',
        setup: () => floorOf(base),
        run: (f) => {
          for (const e of chain) f.apply(e);
        },
        calls: chain.length,
      },
    ],
    { rounds: ROUNDS, warmup: 2, collect: true },
  );
  rows.push({
    label: `a chain of ${chain.length} single applies ÷ a floor that books only the global window`,
    ratio: medianRatio(times['apply chain'], times['global floor chain']),
    bar: 5,
  });
}

process.stdout.write(`${JSON.stringify({ rows })}\n`);
