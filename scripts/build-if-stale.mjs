#!/usr/bin/env node
// Builds when dist is missing or older than any source file. Run by `npm start` and
// before the tests that start the built command. Build output goes to stderr: stdout's
// first line belongs to the server.
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

function builtAt() {
  try {
    return Math.min(statSync('dist/cli.js').mtimeMs, statSync('dist/index.js').mtimeMs);
  } catch {
    return 0;
  }
}

if (builtAt() < newest('src')) {
  const r = spawnSync('npm', ['run', '--silent', 'build'], { stdio: ['ignore', 2, 2] });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
