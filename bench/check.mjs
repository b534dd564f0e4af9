#!/usr/bin/env node
// Reads `vitest bench --outputJson` results, prints the ratios as a Markdown table and
// fails (exit 1) when a ratio crosses its bar. With --readme, also writes the table into
// README.md between the bench markers.
import { readFileSync, writeFileSync } from 'node:fs';

/** [label, numerator bench, denominator bench, bar or null (reported only)]. */
export const RATIOS = [
  ['replay: applyAll ÷ mutable floor', 'peg-limits applyAll', 'mutable floor', 3],
  [
    'replay: apply one event at a time ÷ mutable floor',
    'peg-limits apply, one event at a time',
    'mutable floor',
    null,
  ],
  [
    'one apply(withdrawalRequested): 100k ÷ 1k retained',
    'apply at 100k retained',
    'apply at 1k retained',
    2,
  ],
  [
    'one apply(blockConnected): 100k (forgets 50) ÷ 1k retained',
    'block at 100k retained (forgets 50)',
    'block at 1k retained',
    null,
  ],
  [
    'getLimits: 100k ÷ 100 withdrawals in the window',
    'getLimits at 100k in window',
    'getLimits at 100 in window',
    2,
  ],
  [
    'scanning recompute ÷ getLimits, 100k in the window',
    'scanning recompute at 100k in window',
    'getLimits at 100k in window',
    null,
  ],
  ['verify a right secret ÷ a wrong one', 'verify right secret', 'verify wrong secret', null],
  ['verify an unknown name ÷ a wrong secret', 'verify unknown name', 'verify wrong secret', null],
];

export function evaluate(results) {
  const byName = new Map();
  for (const file of results.files)
    for (const group of file.groups) for (const b of group.benchmarks) byName.set(b.name, b);
  const rows = [];
  let failed = false;
  for (const [label, num, den, bar] of RATIOS) {
    const a = byName.get(num);
    const b = byName.get(den);
    if (a === undefined || b === undefined) {
      if (bar !== null) {
        failed = true;
        rows.push(`| ${label} | missing | ${bar}× | FAIL |`);
      }
      continue;
    }
    const ratio = a.median / b.median;
    const ok = bar === null || ratio <= bar;
    if (!ok) failed = true;
    rows.push(
      `| ${label} | ${ratio.toFixed(2)}× | ${bar === null ? '—' : `≤ ${bar}×`} | ${bar === null ? 'reported' : ok ? 'pass' : 'FAIL'} |`,
    );
  }
  const times = [...byName.values()].map(
    (b) => `| ${b.name} | ${formatTime(b.median)} | ${b.sampleCount} |`,
  );
  const table = [
    '| ratio (medians, same run) | value | bar | |',
    '|---|---|---|---|',
    ...rows,
    '',
    '| benchmark | median | samples |',
    '|---|---|---|',
    ...times,
  ].join('\n');
  return { table, failed };
}

function formatTime(ms) {
  if (ms >= 1) return `${ms.toFixed(2)} ms`;
  if (ms >= 0.001) return `${(ms * 1000).toFixed(2)} µs`;
  return `${(ms * 1e6).toFixed(0)} ns`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = process.argv[2] ?? 'bench/results.json';
  const { table, failed } = evaluate(JSON.parse(readFileSync(file, 'utf8')));
  console.log(table);
  if (process.argv.includes('--readme')) {
    const readme = readFileSync('README.md', 'utf8');
    const start = '<!-- bench:start -->';
    const end = '<!-- bench:end -->';
    const at = readme.indexOf(start);
    const until = readme.indexOf(end);
    if (at < 0 || until < 0) throw new Error('README.md has no bench markers');
    writeFileSync(
      'README.md',
      `${readme.slice(0, at + start.length)}\n${table}\n${readme.slice(until)}`,
    );
  }
  if (failed) {
    console.error('\nA benchmark bar was crossed.');
    process.exit(1);
  }
}
