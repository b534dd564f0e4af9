/**
 * Prometheus's own tools, from Debian's `prometheus` package (`.ci/run` installs it): where
 * they are, whether this machine has them, and `promtool check metrics` on part of an
 * exposition.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const PROMTOOL = '/usr/bin/promtool';
export const PROMETHEUS = '/usr/bin/prometheus';
export const PROMETHEUS_MISSING = `no ${PROMETHEUS} or ${PROMTOOL} (apt-get install prometheus)`;
export const HAVE_PROMETHEUS = existsSync(PROMTOOL) && existsSync(PROMETHEUS);

/**
 * The lines of an exposition that belong to metrics whose names start with `prefix` (letters
 * and underscores).
 */
export function linesOf(text: string, prefix: string): string {
  const ours = new RegExp(`^(# (HELP|TYPE) )?${prefix}`);
  return text
    .split('\n')
    .filter((line) => ours.test(line))
    .join('\n');
}

/** `promtool check metrics` on `text`: its exit status and what it printed. */
export function checkMetrics(text: string): {
  readonly status: number | null;
  readonly output: string;
} {
  const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return { status: r.status, output: r.stdout + r.stderr };
}
