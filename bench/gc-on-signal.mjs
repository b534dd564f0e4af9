// Loaded into a server process with `node --expose-gc --import ./bench/gc-on-signal.mjs`: on
// SIGUSR2, runs two full garbage collections and prints `rss after gc KIB heap BYTES` (the
// process's resident set then, from /proc, and the heap in use), so that a benchmark can set the peak against what the
// process holds once its garbage is gone.
import { readFileSync } from 'node:fs';

process.on('SIGUSR2', () => {
  globalThis.gc();
  globalThis.gc();
  const kib = /VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1];
  process.stdout.write(`rss after gc ${kib} heap ${process.memoryUsage().heapUsed}\n`);
});
