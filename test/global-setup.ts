/** The process-level tests run the built command: build when dist is missing or older than src. */
import { execSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

export default function setup(): void {
  let built = 0;
  try {
    built = Math.min(statSync('dist/cli.js').mtimeMs, statSync('dist/index.js').mtimeMs);
  } catch {
    // not built yet
  }
  if (built < newest('src')) execSync('npm run --silent build', { stdio: 'ignore' });
}
