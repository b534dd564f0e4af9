// The audit trail's route (src/server/node-http/audit-route.ts): the server's own, read from its log.
import { expect, test } from 'vitest';
import type { EventLog } from '../../../src/index.js';
import { auditRoute } from '../../../src/server/node-http/audit-route.js';

const asked: Array<[number, number]> = [];
const log = {
  audit: async (after: number, limit: number) => {
    asked.push([after, limit]);
    return ['{"position":1}', '{"position":2}'];
  },
} as unknown as EventLog;

const get = (path: string) =>
  auditRoute(log).serve!(
    { method: 'GET', path },
    { name: 'ops', tokenHash: '', scopes: ['chain'] },
  );

test('a malformed query is 400, naming only what was sent, and the log is not read', async () => {
  const r = await get('/admin/audit?limit=20000');
  expect(r.status).toBe(400);
  expect(JSON.parse(r.body).detail).toBe('limit must be an integer from 0 to 10000, got "20000"');
  const both = JSON.parse((await get('/admin/audit?after=-1&limit=x')).body).detail;
  expect(both).toBe(
    'after must be a non-negative integer (a log position), got "-1"; limit must be an integer from 0 to 10000, got "x"',
  );
  expect(asked).toEqual([]);
});

test("the records after a position are each record's exact text, in order", async () => {
  const r = await get('/admin/audit?after=7&limit=2');
  expect([r.status, r.body, r.headers['cache-control']]).toEqual([
    200,
    '[{"position":1},{"position":2}]',
    'no-store',
  ]);
  expect(asked).toEqual([[7, 2]]);
  await get('/admin/audit');
  expect(asked[1]).toEqual([0, 1000]);
});

test('a log that keeps no trail answers 404, saying so', async () => {
  const r = await auditRoute({} as EventLog).serve!(
    { method: 'GET', path: '/admin/audit' },
    undefined,
  );
  expect([r.status, JSON.parse(r.body).code]).toEqual([404, 'not_found']);
});
