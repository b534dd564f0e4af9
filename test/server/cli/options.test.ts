// The command's option table: the parser and the usage text are made from it, so neither
// can name an option the other does not; and docs/operating.md tells each of them.
import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { connectionLimitsOf, SERVE_OPTIONS, USAGE } from '../../../src/server/cli/options.js';
import { DEFAULT_SERVER_LIMITS } from '../../../src/server/node-http/index.js';

const listed = SERVE_OPTIONS.filter((o) => o.help.length > 0);

test('the usage text lists every option the parser takes, once each, in the table order', () => {
  const named = [...USAGE.matchAll(/^ {2}--([a-z-]+)/gm)].map((m) => m[1]);
  expect(named).toEqual(listed.map((o) => o.name));
  // --help is taken (and -h) but not listed.
  expect(SERVE_OPTIONS.find((o) => o.name === 'help')?.short).toBe('h');
});

test('every help line of an option starts at the same column, past a name that fills it', () => {
  const lines = USAGE.split('\n');
  const options = lines.slice(
    lines.findIndex((l) => l.startsWith('  --')),
    lines.length - [...lines].reverse().findIndex((l) => l.startsWith(' '.repeat(28))),
  );
  for (const line of options) {
    const left = /^ {2}--\S+(?: [^ ]+)?/.exec(line)?.[0] ?? '';
    // A continuation, or a name too long for the column (its help on the next line).
    if (left === '' || left === line) {
      if (left === '') expect(line.slice(0, 28).trim() === '' && line[28] !== ' ', line).toBe(true);
      continue;
    }
    const helpAt = left.length + line.slice(left.length).search(/\S/);
    expect(helpAt, line).toBe(left.length < 28 ? 28 : left.length + 1);
  }
});

test('docs/operating.md tells every option', () => {
  const page = readFileSync('docs/operating.md', 'utf8');
  expect(listed.filter((o) => !page.includes(`--${o.name}`)).map((o) => o.name)).toEqual([]);
});

test('a connection-limit option sets its limit (seconds as milliseconds), the others keeping their defaults', () => {
  expect(connectionLimitsOf({})).toEqual(DEFAULT_SERVER_LIMITS);
  const set = connectionLimitsOf({ 'header-timeout': '2.5', 'max-connections': '7' });
  expect(set).toEqual({ ...DEFAULT_SERVER_LIMITS, headersTimeoutMs: 2500, maxConnections: 7 });
  expect(USAGE).toContain(`--header-timeout ${DEFAULT_SERVER_LIMITS.headersTimeoutMs / 1000} `);
});
