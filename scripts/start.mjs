#!/usr/bin/env node
// `npm start`: builds when dist is missing or older than the sources, then runs
// `peg-limits serve` with the arguments given after `npm start --`.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

let built = 0;
try {
  built = statSync('dist/cli.js').mtimeMs;
} catch {}
if (built < newest('src')) {
  // Build output goes to stderr: stdout's first line belongs to the server.
  const r = spawnSync('npm', ['run', '--silent', 'build'], { stdio: ['ignore', 2, 2] });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
const server = spawn(process.execPath, ['dist/cli.js', 'serve', ...process.argv.slice(2)], {
  stdio: 'inherit',
});
// Pass stop signals on, so the server shuts down gracefully and nothing is left behind.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => server.kill(signal));
server.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));

// `kill <npm pid>` ends npm and its shell without a word to us: when our parent goes, stop
// the server too (process.ppid is read once, at start; /proc says who the parent is now).
const parent = process.ppid;
function parentAlive() {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent;
  } catch {
    try {
      process.kill(parent, 0);
      return true;
    } catch {
      return false;
    }
  }
}
setInterval(() => {
  if (!parentAlive()) server.kill('SIGTERM');
}, 200).unref();
