#!/usr/bin/env node
// `npm start`: builds when dist is missing or older than the sources, then runs
// `peg-limits serve` with the arguments given after `npm start --`.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
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
const r = spawnSync(process.execPath, ['dist/cli.js', 'serve', ...process.argv.slice(2)], {
  stdio: 'inherit',
});
process.exit(r.status ?? (r.signal ? 1 : 0));
