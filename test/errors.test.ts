/**
 * One base for every error the project throws: each error class of both entries descends
 * from PegLimitsError and carries a stable snake_case code, and no source file throws an
 * error of another kind.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import * as core from '../src/index.js';
import { NodeAnswerError } from '../src/internal.js';
import * as server from '../src/server/index.js';
import { LoggerUnavailable, MetricsUnavailable } from '../src/server/ops/index.js';
import { ObserverUnavailable } from '../src/server/stacks/observer.js';
import { StacksRpcError } from '../src/server/stacks/rpc-client.js';

const { PegLimitsError } = core;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(join(dir, e.name))
      : e.name.endsWith('.ts')
        ? [join(dir, e.name)]
        : [],
  );
}

describe('every error descends from PegLimitsError and carries a snake_case code', () => {
  const made: ReadonlyArray<[string, Error]> = [
    ['LimitsError', new core.LimitsError('invalid_amount', 'x')],
    ['LogConflict', new core.LogConflict(core.createLimitsState())],
    ['LogBusy', new core.LogBusy('x')],
    ['LogUnavailable', new core.LogUnavailable('x')],
    ['FlushError', new server.FlushError('x')],
    ['StoreError', new server.StoreError('x')],
    ['PgLogError', new server.PgLogError('x')],
    ['LoggerUnavailable', new LoggerUnavailable('x')],
    ['MetricsUnavailable', new MetricsUnavailable('x')],
    ['StacksRpcError', new StacksRpcError('x')],
    ['ObserverUnavailable', new ObserverUnavailable('x')],
    ['NodeAnswerError', new NodeAnswerError('x')],
  ];
  test.each(made)('%s', (name, error) => {
    expect(error).toBeInstanceOf(PegLimitsError);
    expect(error.name).toBe(name);
    expect((error as InstanceType<typeof PegLimitsError>).code).toMatch(/^[a-z]+(_[a-z]+)*$/);
  });

  test('the server entry exports the same base as the core entry', () => {
    expect(server.PegLimitsError).toBe(PegLimitsError);
    expect(server.LogConflict).toBe(core.LogConflict);
  });

  test('an error keeps the cause it was given', () => {
    const cause = new Error('EIO');
    expect(new server.FlushError('flush failed', { cause }).cause).toBe(cause);
  });
});

test('no source file throws an Error, TypeError or RangeError of its own (the page script aside)', () => {
  const plain = sources('src')
    .filter((f) => !f.endsWith(join('documents', 'dashboard.ts')))
    .flatMap((f) =>
      readFileSync(f, 'utf8')
        .split('\n')
        .map((line, i) => ({ line, where: `${f}:${i + 1}` }))
        .filter(({ line }) => /throw new (Error|TypeError|RangeError)\(/.test(line))
        .map(({ where }) => where),
    );
  expect(plain).toEqual([]);
});
