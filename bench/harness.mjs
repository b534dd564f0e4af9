/**
 * A small timing harness for a noisy shared machine: contenders run in alternating rounds
 * (A, B, A, B, …), each round timing enough calls to last a few milliseconds, and a figure
 * is the median over rounds of the per-round ratio. Against the built package in dist/.
 */

/** The median of numbers. */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

// Times `run` (after `setup`, untimed) and returns milliseconds per call. When `calls` is
// not given, repeats the call until at least `minMs` have passed.
function timeOnce(contender, minMs, collect) {
  const input = contender.setup?.();
  // A long timed run starts on a collected heap, so that neither contender pays for the
  // other's garbage (the gate runs this with --expose-gc). Not for short ones: the
  // collector's concurrent sweeping after a forced GC would land in their few milliseconds.
  if (collect) globalThis.gc?.();
  if (contender.calls !== undefined) {
    const t0 = performance.now();
    contender.run(input);
    return (performance.now() - t0) / contender.calls;
  }
  let calls = 0;
  const t0 = performance.now();
  let elapsed = 0;
  do {
    contender.run(input);
    calls++;
    elapsed = performance.now() - t0;
  } while (elapsed < minMs);
  return elapsed / calls;
}

/**
 * Runs contenders interleaved for `rounds` rounds (after `warmup` rounds not counted).
 * A contender: `{ name, setup?(): input, run(input), calls? }` where `calls` says how many
 * operations one `run` does (the time is divided by it).
 * `collect`: force a GC before each timed run (for runs of many milliseconds).
 * Returns `{ [name]: [ms per call in each round] }`.
 */
export function interleave(
  contenders,
  { rounds = 9, warmup = 2, minMs = 20, collect = false } = {},
) {
  const times = Object.fromEntries(contenders.map((c) => [c.name, []]));
  for (let r = 0; r < warmup + rounds; r++) {
    // Alternate the order too, so neither contender always runs on a warmer machine.
    const order = r % 2 === 0 ? contenders : [...contenders].reverse();
    for (const c of order) {
      const ms = timeOnce(c, minMs, collect);
      if (r >= warmup) times[c.name].push(ms);
    }
  }
  return times;
}

/** The median over rounds of a[i] / b[i]. */
export function medianRatio(a, b) {
  return median(a.map((x, i) => x / b[i]));
}

/** Milliseconds as a short human figure. */
export function formatTime(ms) {
  if (ms >= 1) return `${ms.toFixed(2)} ms`;
  if (ms >= 0.001) return `${(ms * 1000).toFixed(2)} µs`;
  return `${(ms * 1e6).toFixed(0)} ns`;
}
