/**
 * The heap of the long-running command. V8 lets the old generation grow well past what is
 * live before a full collection (by a factor it picks, often 1.5–2×); a service that holds
 * a large state and replaces parts of it with every write fills that room with garbage, so
 * its peak resident size sits far above what it needs. `peg-limits serve` caps the growth
 * at 60% past the live heap: streaming 600,000 withdrawals (about 200,000 held) with six
 * compactions, the peak resident size fell from 306–322 MiB to 212–235 MiB (1.37–1.39× to
 * 1.05–1.17× the size after a full collection), the slowest read and write while a
 * compaction ran staying within 50 and 100 ms (docs/operating.md, "Memory"). An operator who
 * runs node with a `--heap-growing-percent` of their own keeps it. Node-only.
 */
import { setFlagsFromString } from 'node:v8';

/** How far past the live heap the old generation may grow before a full collection. */
const HEAP_GROWING_PERCENT = 60;

/** Caps V8's heap growth for this process, unless node was started with a cap of its own. */
export function capHeapGrowth(execArgv: ReadonlyArray<string> = process.execArgv): void {
  if (execArgv.some((a) => /^--heap[-_]growing[-_]percent/.test(a))) return;
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
