#!/usr/bin/env node
/**
 * The core benchmarks: each case runs the library beside its baseline, interleaved in
 * rounds; the figure is the median of the per-round ratios. Prints one JSON object:
 * `{ rows: [{ label, ratio, bar, a, b }], notes: [{ label, value }] }`.
 */
import {
  apply,
  applyAll,
  checkDeposit,
  checkWithdrawal,
  createLimitsState,
  decodeJson,
  encodeJson,
  generateThrottleSecret,
  getLimits,
  hashThrottleSecret,
  snapshotOf,
  startThrottle,
  stateFromSnapshot,
} from '../dist/index.js';
import { formatTime, interleave, median, medianRatio } from './harness.mjs';
import {
  applyEach,
  chainWorkload,
  HISTORY,
  limitsFor,
  MutableFloor,
  ScanningService,
  stream,
  WINDOW,
} from './workload.mjs';

const quick = process.argv.includes('--quick');
const ROUNDS = quick ? 5 : 9;
// The replay's rounds are long and its ratio the tightest: more of them steady the median.
// On a shared machine one round's ratio ranged 0.65–2.45× (four runs of twenty rounds), and
// the gate's median of fifteen rounds in three processes 1.34–1.52× from run to run.
const REPLAY_ROUNDS = quick ? 5 : 31;
// One apply at 100k and at 1k: short runs near their bar.
const APPLY_ROUNDS = quick ? 5 : 15;
const rows = [];
const notes = [];

function build(accounts, events) {
  const r = applyAll(
    createLimitsState({ historyBlocks: HISTORY, limits: limitsFor(accounts) }),
    events,
  );
  if (!r.ok) throw r.error;
  return r.state;
}

function floorOf(accounts, events) {
  const floor = new MutableFloor(accounts);
  for (const e of events) floor.apply(e);
  return floor;
}

function same(a, b, what) {
  if (a !== b) throw new Error(`${what}: the library says ${a}, the baseline ${b}`);
}

function row(label, bar, times, a, b) {
  const ratio = medianRatio(times[a], times[b]);
  rows.push({ label, ratio, bar, a: median(times[a]), b: median(times[b]) });
}

// --- replay: 200k events, 500 accounts, window 144 of 2016 heights -------------------------
{
  const accounts = 500;
  const { events } = stream({ blocks: 11_800, perBlock: 16, accounts });
  const times = interleave(
    [
      { name: 'applyAll', run: () => build(accounts, events), calls: 1 },
      { name: 'floor', run: () => floorOf(accounts, events), calls: 1 },
    ],
    // Five of warm-up, as for the global-window floor: V8 is still optimizing the library's
    // longer path through the first four or five replays of a fresh process.
    { rounds: REPLAY_ROUNDS, warmup: 5, collect: true },
  );
  // The answers are compared after the timing: one whole replay run outside the rounds
  // before them sent some processes into a slow mode for the whole run (1.6–1.8× instead of
  // 1.2–1.4×, for 0.2.0 as for this release), so the gate failed at random.
  same(
    getLimits(build(accounts, events)).availableToWithdraw,
    floorOf(accounts, events).available(),
    'replay',
  );
  row(
    `replay of ${events.length} events through applyAll ÷ mutable floor`,
    1.5,
    times,
    'applyAll',
    'floor',
  );
}

// --- a chain of 20,000 single applies on a state holding 100k withdrawals --------------------
{
  const accounts = 500;
  const { base, chain } = chainWorkload(accounts);
  const state = build(accounts, base);
  const held = snapshotOf(state).withdrawals.length;
  if (held < 100_000) throw new Error(`the chain's state holds ${held} withdrawals`);
  const runChain = () => applyEach(apply, state, chain);
  const floorBase = () => floorOf(accounts, base);
  const times = interleave(
    [
      { name: 'apply chain', run: runChain, calls: chain.length },
      {
        name: 'floor chain',
        setup: floorBase,
        run: (f) => {
          for (const e of chain) f.apply(e);
        },
        calls: chain.length,
      },
    ],
    { rounds: ROUNDS, warmup: 2, collect: true },
  );
  // Compared after the timing, as for the replay.
  same(
    getLimits(runChain()).availableToWithdraw,
    (() => {
      const f = floorBase();
      for (const e of chain) f.apply(e);
      return f.available();
    })(),
    'chain',
  );
  row(
    `a chain of ${chain.length} single apply calls at ${held} held ÷ mutable floor`,
    4,
    times,
    'apply chain',
    'floor chain',
  );

  // --- forgetting: blocks that each forget 50 withdrawals -----------------------------------
  const blocks = [];
  for (let h = state.highestTip + 1; blocks.length < 500; h++)
    blocks.push({ type: 'blockConnected', height: h });
  const forgetTimes = interleave(
    [
      {
        name: 'forget',
        run: () => {
          let s = state;
          for (const e of blocks) s = apply(s, e).state;
        },
        calls: blocks.length * 50,
      },
      {
        name: 'floor forget',
        setup: floorBase,
        run: (f) => {
          for (const e of blocks) f.apply(e);
        },
        calls: blocks.length * 50,
      },
    ],
    { rounds: ROUNDS, warmup: 2, collect: true },
  );
  row(
    'forgetting: cost per forgotten withdrawal (blocks forgetting 50 each) ÷ mutable floor',
    3,
    forgetTimes,
    'forget',
    'floor forget',
  );

  // --- snapshot round trip at 100k held ------------------------------------------------------
  const text = encodeJson(snapshotOf(state));
  const snapTimes = interleave(
    [
      { name: 'snapshot', run: () => encodeJson(snapshotOf(state)), calls: 1 },
      {
        name: 'restore',
        run: () => {
          const r = stateFromSnapshot(decodeJson(text));
          if (!r.ok) throw r.error;
        },
        calls: 1,
      },
    ],
    { rounds: 3, warmup: 1, collect: true },
  );
  notes.push({
    label: `snapshot of ${held} held withdrawals: size`,
    value: `${(text.length / 1024 / 1024).toFixed(1)} MiB (${text.length} bytes)`,
  });
  notes.push({ label: 'encodeJson(snapshotOf(s))', value: formatTime(median(snapTimes.snapshot)) });
  notes.push({
    label: 'stateFromSnapshot(decodeJson(text))',
    value: formatTime(median(snapTimes.restore)),
  });

  // --- opening a window on an entry at 100k held (the one cost that follows the history) ---
  const openTimes = interleave(
    [
      {
        name: 'open',
        run: () =>
          apply(state, {
            type: 'accountLimitsSet',
            account: 'acct1',
            limits: { rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: 10n ** 12n },
          }),
        calls: 1,
      },
    ],
    { rounds: 5, warmup: 1, collect: true },
  );
  rows.push({
    label: `an entry gains its own window at ${held} held (a time, not a ratio)`,
    ratio: median(openTimes.open),
    bar: 50,
    unit: 'ms',
  });
}

// --- flat from 1k to 100k held: one apply, getLimits ---------------------------------------
{
  const accounts = 500;
  const small = build(accounts, stream({ blocks: 63, perBlock: 16, accounts }).events);
  const largeStream = stream({ blocks: HISTORY, perBlock: 50, accounts });
  const large = build(accounts, largeStream.events);
  let k = 0;
  const one = (s) => () => {
    for (let i = 0; i < 100; i++) {
      const r = apply(s, {
        type: 'withdrawalRequested',
        id: `extra${k++}`,
        account: `acct${k % accounts}`,
        amount: 12_345n,
        height: s.tip,
      });
      if (!r.ok) throw r.error;
    }
  };
  const applyTimes = interleave(
    [
      { name: '100k', run: one(large) },
      { name: '1k', run: one(small) },
    ],
    { rounds: APPLY_ROUNDS },
  );
  row('one apply(withdrawalRequested): 100k ÷ 1k held', 1.3, applyTimes, '100k', '1k');
  notes.push({
    label: 'one apply(withdrawalRequested) at 100k held',
    value: formatTime(median(applyTimes['100k']) / 100),
  });

  const inWindow = build(accounts, stream({ blocks: WINDOW, perBlock: 700, accounts }).events);
  const fewInWindow = build(accounts, stream({ blocks: 7, perBlock: 16, accounts }).events);
  const scanning = new ScanningService();
  for (const e of stream({ blocks: WINDOW, perBlock: 700, accounts }).events) scanning.apply(e);
  same(getLimits(inWindow).availableToWithdraw, scanning.available(), 'getLimits');
  const reps = (fn) => () => {
    for (let i = 0; i < 100; i++) fn();
  };
  const getTimes = interleave(
    [
      { name: '100k', run: reps(() => getLimits(inWindow)) },
      { name: '100', run: reps(() => getLimits(fewInWindow)) },
      { name: 'scan', run: () => scanning.available(), calls: 0.01 },
    ],
    { rounds: ROUNDS },
  );
  row('getLimits: 100k ÷ 100 withdrawals in the window', 1.5, getTimes, '100k', '100');
  rows.push({
    label: 'scanning recompute ÷ getLimits, 100k in the window',
    ratio: medianRatio(getTimes.scan, getTimes['100k']),
    bar: null,
  });
}

// --- a window cap set as a share of the pegged total: views, checks and applies ------------
{
  const accounts = 500;
  const large = build(accounts, stream({ blocks: HISTORY, perBlock: 50, accounts }).events);
  // The same state with the same total, one with the global window cap at 50% of it too
  // (and the windowed accounts' own caps at 50% of their own totals).
  const total = { type: 'peggedTotalObserved', total: 10n ** 15n };
  const plain = applyAll(large, [total]);
  const share = { rollingWithdrawalCapShare: 5_000n };
  const shared = applyAll(large, [
    total,
    { type: 'limitsUpdated', limits: { ...share, accountCaps: { acct0: share } } },
  ]);
  if (!plain.ok || !shared.ok) throw new Error('the share states did not build');
  let k = 0;
  const views = (s) => () => {
    for (let i = 0; i < 100; i++) {
      getLimits(s);
      checkWithdrawal(s, { account: `acct${(k++ % 10) * 10}`, amount: 12_345n });
    }
  };
  const applies = (s) => () => {
    for (let i = 0; i < 100; i++) {
      const r = apply(s, {
        type: 'withdrawalRequested',
        id: `shared${k++}`,
        account: `acct${k % accounts}`,
        amount: 12_345n,
        height: s.tip,
      });
      if (!r.ok) throw r.error;
    }
  };
  const viewTimes = interleave(
    [
      { name: 'shared', run: views(shared.state) },
      { name: 'plain', run: views(plain.state) },
    ],
    { rounds: ROUNDS },
  );
  row(
    'getLimits and checkWithdrawal with a share set ÷ without, 100k held',
    1.2,
    viewTimes,
    'shared',
    'plain',
  );
  const applyTimes = interleave(
    [
      { name: 'shared', run: applies(shared.state) },
      { name: 'plain', run: applies(plain.state) },
    ],
    { rounds: APPLY_ROUNDS },
  );
  row(
    'one apply(withdrawalRequested) with a share set ÷ without, 100k held',
    1.2,
    applyTimes,
    'shared',
    'plain',
  );
}

// --- the peg's backing checked: views, checks and applies with the check on ------------------
{
  const accounts = 500;
  const large = build(accounts, stream({ blocks: HISTORY, perBlock: 50, accounts }).events);
  const total = { type: 'peggedTotalObserved', total: 10n ** 15n };
  const off = applyAll(large, [total]);
  // The same state with the check on and the peg backed: every view and check asks it.
  const on = applyAll(large, [
    total,
    { type: 'reservesObserved', total: 10n ** 15n, height: large.tip },
    { type: 'pegIntegritySet', maxUnbacked: 10n ** 8n, reservesMaxAge: 6 },
  ]);
  if (!off.ok || !on.ok) throw new Error('the integrity states did not build');
  let k = 0;
  const views = (s) => () => {
    for (let i = 0; i < 100; i++) {
      getLimits(s);
      checkWithdrawal(s, { account: `acct${(k++ % 10) * 10}`, amount: 12_345n });
      checkDeposit(s, { account: `acct${k % 10}`, amount: 12_345n });
    }
  };
  const applies = (s) => () => {
    for (let i = 0; i < 100; i++) {
      const r = apply(s, {
        type: 'withdrawalRequested',
        id: `checked${k++}`,
        account: `acct${k % accounts}`,
        amount: 12_345n,
        height: s.tip,
      });
      if (!r.ok) throw r.error;
    }
  };
  const viewTimes = interleave(
    [
      { name: 'on', run: views(on.state) },
      { name: 'off', run: views(off.state) },
    ],
    { rounds: ROUNDS },
  );
  row(
    "getLimits and the checks with the peg's backing checked ÷ not, 100k held",
    1.2,
    viewTimes,
    'on',
    'off',
  );
  const applyTimes = interleave(
    [
      { name: 'on', run: applies(on.state) },
      { name: 'off', run: applies(off.state) },
    ],
    { rounds: APPLY_ROUNDS },
  );
  row(
    "one apply(withdrawalRequested) with the peg's backing checked ÷ not, 100k held",
    1.2,
    applyTimes,
    'on',
    'off',
  );
}

// --- the mint window: views and checks with one set, mints in every block of it ---------------
{
  const accounts = 500;
  const large = build(accounts, stream({ blocks: HISTORY, perBlock: 50, accounts }).events);
  const total = { type: 'peggedTotalObserved', total: 10n ** 15n };
  // Ten mints in each of the window's 144 blocks, the same in both states; one sets a global
  // mint window (its cap a share of the total too) and acct0's own.
  const mints = [];
  for (let h = large.tip - 143; h <= large.tip; h++)
    for (let i = 0; i < 10; i++)
      mints.push({
        type: 'depositMinted',
        id: `${h}:${i}`,
        account: `acct${i}`,
        amount: 1_000n,
        height: h,
      });
  const plain = applyAll(large, [total, ...mints]);
  const window = { rollingMintBlocks: 144n, rollingMintCap: 10n ** 12n, rollingMintCapShare: 100n };
  const minted = applyAll(large, [
    total,
    ...mints,
    { type: 'limitsUpdated', limits: { ...window, accountCaps: { acct0: window } } },
  ]);
  if (!plain.ok || !minted.ok) throw new Error('the mint window states did not build');
  let k = 0;
  const views = (s) => () => {
    for (let i = 0; i < 100; i++) {
      getLimits(s);
      checkWithdrawal(s, { account: `acct${(k++ % 10) * 10}`, amount: 12_345n });
      checkDeposit(s, { account: `acct${k % 10}`, amount: 12_345n });
    }
  };
  const viewTimes = interleave(
    [
      { name: 'mint window', run: views(minted.state) },
      { name: 'none', run: views(plain.state) },
    ],
    { rounds: ROUNDS },
  );
  row(
    'getLimits and the checks with a mint window set ÷ without, 100k held, 1,440 mints',
    1.2,
    viewTimes,
    'mint window',
    'none',
  );
}

// --- throttle key verification --------------------------------------------------------------
{
  const secret = generateThrottleSecret();
  const wrong = generateThrottleSecret();
  const r = applyAll(createLimitsState(), [
    { type: 'throttleKeyAdded', name: 'ops-1', secretHash: hashThrottleSecret(secret) },
  ]);
  const state = r.state;
  const reps = (req) => () => {
    for (let i = 0; i < 100; i++) startThrottle(state, req);
  };
  const times = interleave(
    [
      { name: 'right', run: reps({ name: 'ops-1', secret }) },
      { name: 'wrong', run: reps({ name: 'ops-1', secret: wrong }) },
      { name: 'unknown', run: reps({ name: 'nobody', secret: wrong }) },
    ],
    { rounds: ROUNDS, minMs: 10 },
  );
  notes.push({
    label: 'startThrottle with a wrong secret',
    value: formatTime(median(times.wrong) / 100),
  });
  rows.push({
    label: 'verify an unknown name ÷ a wrong secret',
    ratio: medianRatio(times.unknown, times.wrong),
    bar: null,
  });
}

process.stdout.write(`${JSON.stringify({ rows, notes })}\n`);
