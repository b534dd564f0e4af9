/**
 * Benchmarks of the core. Each group runs the library beside its baselines in the same
 * run; `bench/check.mjs` turns the ratios into the README table and enforces the bars.
 */
import { bench, describe } from 'vitest';
import {
  apply,
  applyAll,
  createLimitsState,
  getLimits,
  type LimitsEvent,
  type LimitsState,
} from '../src/index.js';
import { CAP, HISTORY, MutableFloor, ScanningService, stream, WINDOW } from './stream.js';

const limits = { rollingWithdrawalBlocks: BigInt(WINDOW), rollingWithdrawalCap: CAP };
const fresh = () => createLimitsState({ historyBlocks: HISTORY, limits });

function build(events: ReadonlyArray<LimitsEvent>): LimitsState {
  const r = applyAll(fresh(), events);
  if (!r.ok) throw r.error;
  return r.state;
}

function assertSame(a: bigint | null, b: bigint, what: string): void {
  if (a !== b) throw new Error(`${what}: the library says ${a}, the baseline ${b}`);
}

// --- replay -----------------------------------------------------------------------------
const REPLAY_BLOCKS = 3000;
const replayEvents = stream(REPLAY_BLOCKS);
{
  const floor = new MutableFloor(HISTORY, WINDOW, CAP);
  for (const e of replayEvents) floor.apply(e);
  assertSame(getLimits(build(replayEvents)).availableToWithdraw, floor.available(), 'replay');
}

describe(`replay: ${REPLAY_BLOCKS} blocks × 16 withdrawals, 1 in 100 rejected, window ${WINDOW}`, () => {
  const opts = { time: 3000, iterations: 15, warmupIterations: 3 };
  bench(
    'peg-limits applyAll',
    () => {
      build(replayEvents);
    },
    opts,
  );
  bench(
    'mutable floor',
    () => {
      const floor = new MutableFloor(HISTORY, WINDOW, CAP);
      for (const e of replayEvents) floor.apply(e);
    },
    opts,
  );
  bench(
    'peg-limits apply, one event at a time',
    () => {
      let s = fresh();
      for (const e of replayEvents) {
        const r = apply(s, e);
        if (r.ok) s = r.state;
      }
    },
    { time: 0, iterations: 3, warmupIterations: 1 },
  );
});

// --- one apply at 1k and at 100k retained withdrawals ----------------------------------
const small = build(stream(63, 16));
const large = build(stream(HISTORY, 50));
if (large.withdrawals.size < 100_000 || small.withdrawals.size > 1_100)
  throw new Error('unexpected sizes');

function oneWithdrawal(state: LimitsState, n: number): void {
  const r = apply(state, {
    type: 'withdrawalRequested',
    id: `extra${n}`,
    account: `acct${n % 64}`,
    amount: 12_345n,
    height: state.tip!,
  });
  if (!r.ok) throw r.error;
}

let k = 0;
describe('apply(withdrawalRequested) by retained withdrawals', () => {
  bench('apply at 1k retained', () => {
    oneWithdrawal(small, k++);
  });
  bench('apply at 100k retained', () => {
    oneWithdrawal(large, k++);
  });
});

describe('apply(blockConnected) by retained withdrawals', () => {
  bench('block at 1k retained', () => {
    apply(small, { type: 'blockConnected', height: small.tip! + 1 });
  });
  bench('block at 100k retained (forgets 50)', () => {
    apply(large, { type: 'blockConnected', height: large.tip! + 1 });
  });
});

// --- getLimits at 100 and 100k withdrawals in the window --------------------------------
const few = stream(WINDOW, 1).slice(0, 100 + 100);
const fewState = build(few);
const manyEvents = stream(WINDOW, 700);
const manyState = build(manyEvents);
const scanning = new ScanningService(WINDOW, CAP);
for (const e of manyEvents) scanning.apply(e);
assertSame(getLimits(manyState).availableToWithdraw, scanning.available(), 'getLimits');

describe('getLimits by withdrawals in the window', () => {
  bench('getLimits at 100 in window', () => {
    getLimits(fewState);
  });
  bench('getLimits at 100k in window', () => {
    getLimits(manyState);
  });
  bench('scanning recompute at 100k in window', () => {
    scanning.available();
  });
});
