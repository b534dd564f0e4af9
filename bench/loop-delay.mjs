// Loaded into a server process with `node --import ./bench/loop-delay.mjs`: prints, once a
// second, the longest the event loop was held since the last line (`loop-delay max MS`).
import { monitorEventLoopDelay } from 'node:perf_hooks';

const histogram = monitorEventLoopDelay({ resolution: 5 });
histogram.enable();
setInterval(() => {
  process.stdout.write(`loop-delay max ${(histogram.max / 1e6).toFixed(1)}\n`);
  histogram.reset();
}, 1000).unref();
