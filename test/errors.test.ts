/**
 * One base for every error the project throws: each error class of both entries descends
 * from PegLimitsError and carries a stable snake_case code, and no source file throws an
 * error of another kind.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import * as core from '../src/index.js';
import { NodeAnswerError } from '../src/internal.js';
import * as server from '../src/server/index.js';
import { LoggerUnavailable, MetricsUnavailable } from '../src/server/ops/index.js';
import { createAlerts, memoryCursors } from '../src/server/record/index.js';
import { ObserverUnavailable } from '../src/server/stacks/observer.js';
import { StacksRpcError } from '../src/server/stacks/rpc-client.js';
import { filesUnder } from './support/files.js';

const { PegLimitsError } = core;

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
  const plain = filesUnder('src')
    .filter((f) => !f.endsWith(join('documents', 'dashboard-script.ts')))
    .flatMap((f) =>
      readFileSync(f, 'utf8')
        .split('\n')
        .map((line, i) => ({ line, where: `${f}:${i + 1}` }))
        .filter(({ line }) => /throw new (Error|TypeError|RangeError)\(/.test(line))
        .map(({ where }) => where),
    );
  expect(plain).toEqual([]);
});

describe("a programmer's error is a LimitsError with a code, not a TypeError or RangeError", () => {
  const code = (run: () => unknown) => {
    try {
      run();
    } catch (e) {
      expect(e).toBeInstanceOf(core.LimitsError);
      return (e as InstanceType<typeof core.LimitsError>).code;
    }
    return 'no error';
  };

  test('formatAmount of a value that is not an int64 bigint is invalid_amount', () => {
    expect(code(() => core.formatAmount(2n ** 63n))).toBe('invalid_amount');
  });

  test('decimals out of 0 to 30 are invalid_option', () => {
    expect(code(() => core.parseAmount('1', 31))).toBe('invalid_option');
  });

  test('encodeJson of a value with no JSON form is invalid_json', () => {
    expect(code(() => core.encodeJson(undefined))).toBe('invalid_json');
  });

  test('createService without a state or a log is invalid_option', () => {
    expect(code(() => core.createService({}))).toBe('invalid_option');
  });

  test('alerts to a URL that is not http(s) are invalid_option', () => {
    const log = { audit: async () => [] } as unknown as core.EventLog;
    expect(code(() => createAlerts({ urls: ['ftp://x'] }, { log, cursors: memoryCursors() }))).toBe(
      'invalid_option',
    );
  });
});
