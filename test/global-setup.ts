/** The process-level tests run the built command: build when dist is missing or stale. */
import { execFileSync } from 'node:child_process';

export default function setup(): void {
  execFileSync('node', ['scripts/build-if-stale.mjs'], { stdio: 'ignore' });
}
