#!/usr/bin/env node
// `node bench/loosening.mjs`: what the loosening check adds to an operator batch, on the
// built package. For each batch, in alternating rounds: applyAll of the batch (what
// POST /admin/events does anyway) and loosens(before, after) (what a service whose
// loosening waits does besides). Prints the median time of each and their ratio. A chain
// batch is never checked (the route sees no event of its own to judge), so it is not here.
import { applyAll, createLimitsState, hashThrottleSecret, loosens } from '../dist/index.js';

const ENTRIES = 5_000;
const ROUNDS = 9;

function time(fn, ms = 150) {
  let n = 0;
  const start = performance.now();
  let now = start;
  while (now - start < ms) {
    for (let i = 0; i < 50; i++) fn();
    n += 50;
    now = performance.now();
  }
  return ((now - start) * 1000) / n; // µs per call
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

const caps = {
  perWithdrawalCap: 1000n,
  rollingWithdrawalBlocks: 144n,
  rollingWithdrawalCap: 100_000n,
};
const accountCaps = {};
for (let i = 0; i < ENTRIES; i++) accountCaps[`acct-${i}`] = { perWithdrawalCap: BigInt(100 + i) };
const built = applyAll(createLimitsState({ limits: { ...caps, accountCaps } }), [
  { type: 'blockConnected', height: 870_000 },
  ...Array.from({ length: 10_000 }, (_, i) => ({
    type: 'withdrawalRequested',
    id: `w${i}`,
    account: `acct-${i % ENTRIES}`,
    amount: 1n,
    height: 870_000,
  })),
]);
if (!built.ok) throw built.error;
const state = built.state;

const hundred = {};
for (let i = 0; i < 100; i++) hundred[`acct-${i * 7}`] = { perWithdrawalCap: BigInt(50 + i) };
const batches = [
  [
    'limitsSet: the global caps raised',
    [{ type: 'limitsSet', limits: { ...caps, perWithdrawalCap: 2000n } }],
  ],
  [
    'accountLimitsSet: one entry of 5,000 lowered',
    [{ type: 'accountLimitsSet', account: 'acct-42', limits: { perWithdrawalCap: 10n } }],
  ],
  [
    'limitsSet with 100 of 5,000 entries replaced',
    [{ type: 'limitsSet', limits: { ...caps, accountCaps: hundred } }],
  ],
  [
    'throttleKeyAdded: a key registered',
    [{ type: 'throttleKeyAdded', name: 'ops-9', secretHash: hashThrottleSecret('s'.repeat(22)) }],
  ],
];

console.log(
  `| batch, on a state with ${ENTRIES.toLocaleString('en')} entries and 10,000 withdrawals held | applyAll | loosens | loosens ÷ applyAll |`,
);
console.log('|---|---|---|---|');
for (const [name, events] of batches) {
  const r = applyAll(state, events);
  if (!r.ok) throw r.error;
  const next = r.state;
  const apply = [];
  const check = [];
  for (let round = 0; round < ROUNDS; round++) {
    const a = () => applyAll(state, events);
    const c = () => loosens(state, next);
    if (round % 2 === 0) {
      apply.push(time(a));
      check.push(time(c));
    } else {
      check.push(time(c));
      apply.push(time(a));
    }
  }
  const ratios = apply.map((a, i) => check[i] / a);
  console.log(
    `| ${name} | ${median(apply).toFixed(2)} µs | ${median(check).toFixed(2)} µs | ${median(ratios).toFixed(3)}× |`,
  );
}
