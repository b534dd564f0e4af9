/**
 * The soak the project ships (`npm run soak`, bench/soak.mjs) runs and checks what it says:
 * a short year (1,200 burn blocks, a month of 100) through the observer port of the built
 * command, SIGTERM and SIGKILL restarts, forks and rejections, every month's window equal
 * to the recount.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';

test('a short soak: twelve months through the observer, restarted by SIGTERM and SIGKILL, every month-end window equal to the recount', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ['bench/soak.mjs', '--json'], {
    env: { ...process.env, SOAK_BURN_BLOCKS: '1200' },
    maxBuffer: 16 * 1024 * 1024,
  });
  const result = JSON.parse(stdout.trim().split('\n').pop()!) as {
    rows: Array<{ month: number; agrees: boolean; restart: string; requests: number }>;
    forks: number;
    totals: { requests: number; rejections: number };
  };
  expect(result.rows.map((r) => r.month)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  expect(result.rows.every((r) => r.agrees)).toBe(true);
  expect(result.rows.filter((r) => r.restart.startsWith('SIGKILL')).map((r) => r.month)).toEqual([
    3, 6, 9,
  ]);
  expect(result.forks).toBeGreaterThan(10);
  expect(result.totals.rejections).toBeGreaterThan(10);
}, 120_000);
