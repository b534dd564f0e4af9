/**
 * The memory probe: streams withdrawals over recurring accounts and prints the live heap
 * after a forced GC at given points. Run in a child process with `--expose-gc` by
 * `bench/gate.mjs` (and by hand: `node --expose-gc bench/memory.mjs 200000,600000`), against the
 * built package in dist/.
 *
 * Output: one JSON line `{ "at": [withdrawals…], "heap": [bytes…] }`.
 */
import { applyAll, createLimitsState } from '../dist/index.js';

const ACCOUNTS = 5000;
const PER_BLOCK = 16;
const HISTORY = 2016;
const points = (process.argv[2] ?? '200000,600000').split(',').map(Number);

const gc = globalThis.gc;
if (gc === undefined) throw new Error('run with node --expose-gc');

function heap() {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

// 1 in 16 accounts has an entry with its own window (so it keeps per-block books).
const accountCaps = {};
for (let a = 0; a < ACCOUNTS; a += 16)
  accountCaps[`acct${a}`] = { rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: 10n ** 12n };
let state = createLimitsState({
  historyBlocks: HISTORY,
  limits: { rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: 10n ** 15n, accountCaps },
});

const heaps = [];
let n = 0;
let height = 800_000;
for (const target of points) {
  while (n < target) {
    // One block per batch, as a server journals them.
    const events = [{ type: 'blockConnected', height: ++height }];
    for (let i = 0; i < PER_BLOCK; i++, n++) {
      events.push({
        type: 'withdrawalRequested',
        id: `w${n}`,
        account: `acct${(n * 7919) % ACCOUNTS}`,
        amount: BigInt(10_000 + (n % 997)),
        height,
      });
    }
    const r = applyAll(state, events);
    if (!r.ok) throw r.error;
    state = r.state;
  }
  heaps.push(heap());
}
process.stdout.write(`${JSON.stringify({ at: points, heap: heaps })}\n`);
