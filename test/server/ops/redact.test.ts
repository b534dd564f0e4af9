import { describe, expect, test } from 'vitest';
import { redactAlertUrl, redactStore } from '../../../src/server/ops/redact.js';

describe('what a log line may show of a URL', () => {
  test.each([
    ['postgres://limits:pw@db/limits', 'postgres://limits:***@db/limits'],
    ['postgres://limits@db/limits', 'postgres://limits@db/limits'],
    [
      'postgres://limits:pw@db1,db2/limits?target_session_attrs=read-write',
      'postgres://limits:***@db1,db2/limits?target_session_attrs=read-write',
    ],
    ['postgres://limits:pw@db:notaport/limits', 'postgres://limits:***@db:notaport/limits'],
    [
      'postgres://limits@db/limits?password=pw&sslmode=require',
      'postgres://limits@db/limits?password=***&sslmode=require',
    ],
    ['postgres:///limits?host=/run/pg&password=pw', 'postgres:///limits?host=/run/pg&password=***'],
  ])('a store: %s', (given, shown) => {
    expect(redactStore(given)).toBe(shown);
  });

  test.each([
    ['https://hooks.example/p?token=t', 'https://hooks.example/p?***'],
    ['https://u:p@hooks.example/p', 'https://***:***@hooks.example/p'],
    ['https://u@hooks.example/p#frag', 'https://***@hooks.example/p'],
    ['ftp://u:p@hooks.example/?token=t', 'ftp://***:***@hooks.example/?***'],
    ['not a url ?token=t', 'not a url ?***'],
  ])('an alert URL: %s', (given, shown) => {
    expect(redactAlertUrl(given)).toBe(shown);
  });
});
