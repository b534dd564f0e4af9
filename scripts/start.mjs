#!/usr/bin/env node
// `npm start`: builds when dist is missing or older than the sources, then runs
// `peg-limits serve` with the arguments given after `npm start --`.
import './build-if-stale.mjs';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

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
