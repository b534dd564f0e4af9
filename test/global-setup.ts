/** The process-level tests run the built command; build once if it is missing. */
import { execSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export default function setup(): void {
  if (!existsSync('dist/cli.js') || !existsSync('dist/index.js'))
    execSync('npm run --silent build', { stdio: 'ignore' });
}
