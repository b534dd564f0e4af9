// What the benchmark scripts share: starting a server child process, and writing a figures
// table into README.md between markers.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

/**
 * Starts `node bench/serve-child.mjs ...args`, keeps it in `children` (to kill at the end),
 * and resolves with its URL and how long it took to listen.
 */
export function startChild(args, children) {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn('node', ['bench/serve-child.mjs', ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    child.stdout.on('data', (c) => {
      const m = /listening on (\S+)/.exec(String(c));
      if (m) resolve({ url: m[1], ms: performance.now() - started });
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
}

/** Writes `table` into README.md between `<!-- name:start -->` and `<!-- name:end -->`. */
export function writeReadmeTable(name, table) {
  const readme = readFileSync('README.md', 'utf8');
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const at = readme.indexOf(start);
  const until = readme.indexOf(end);
  if (at < 0 || until < 0) throw new Error(`README.md has no ${name} markers`);
  writeFileSync(
    'README.md',
    `${readme.slice(0, at + start.length)}\n${table}\n${readme.slice(until)}`,
  );
}
