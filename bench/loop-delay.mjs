// Loaded into a server process with `node --import ./bench/loop-delay.mjs`: prints, once a
// second, the longest the event loop was held since the last line and when that second
// began (`loop-delay max MS since EPOCH-MS`), so that a reader can leave out the start-up.
import { monitorEventLoopDelay } from 'node:perf_hooks';

const histogram = monitorEventLoopDelay({ resolution: 5 });
histogram.enable();
let since = Date.now();
setInterval(() => {
  process.stdout.write(`loop-delay max ${(histogram.max / 1e6).toFixed(1)} since ${since}\n`);
  histogram.reset();
  since = Date.now();
}, 1000).unref();
