import { describe, expect, test } from 'vitest';
import {
  createFetchHandler,
  createService,
  decodeJson,
  type LimitsEvent,
} from '../../src/index.js';
import { at } from '../support/helpers.js';

const TOKEN = 'operator-token-0123456789';
const post = (events: unknown) => ({
  method: 'POST',
  path: '/admin/events',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
  body: JSON.stringify(events),
});

describe('createService', () => {
  test('persists accepted events before the new state is visible, in the applied order', async () => {
    const persisted: LimitsEvent[][] = [];
    const service = createService({
      state: at(100),
      adminToken: TOKEN,
      persist: async (events) => {
        await new Promise((r) => setTimeout(r, 5));
        persisted.push([...events]);
      },
    });
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        service.handle(post({ type: 'blockConnected', height: 101 + i })),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(persisted.map((b) => (b[0] as { height: number }).height)).toEqual(
      Array.from({ length: 10 }, (_, i) => 101 + i),
    );
    expect(service.state.tip).toBe(110);
  });

  test('a failed persist answers 500 and leaves the state as it was', async () => {
    const service = createService({
      state: at(100),
      adminToken: TOKEN,
      persist: () => {
        throw new Error('disk full');
      },
    });
    const r = await service.handle(post({ type: 'blockConnected', height: 101 }));
    expect(r.status).toBe(500);
    expect(decodeJson(r.body)).toMatchObject({ code: 'internal_error' });
    expect(service.state.tip).toBe(100);
  });

  test('requests that change nothing persist nothing', async () => {
    let calls = 0;
    const service = createService({ state: at(100), persist: () => void calls++ });
    await service.handle({ method: 'GET', path: '/limits' });
    await service.handle({
      method: 'POST',
      path: '/start_throttle',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(calls).toBe(0);
  });
});

describe('createFetchHandler', () => {
  test('serves the interface to Fetch Requests', async () => {
    const handler = createFetchHandler({
      state: at(100, { pegCap: 9_223_372_036_854_775_807n }),
      adminToken: TOKEN,
    });
    const limits = await handler(new Request('http://localhost/limits'));
    expect(limits.status).toBe(200);
    expect(limits.headers.get('content-type')).toBe('application/json');
    expect(await limits.text()).toContain('"pegCap":9223372036854775807');
    const missing = await handler(new Request('http://localhost/limits/bob%20smith'));
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toBe('application/problem+json');
    const r = await handler(
      new Request('http://localhost/admin/events', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: '{"type":"blockConnected","height":101}',
      }),
    );
    expect(r.status).toBe(200);
    expect(handler.state.tip).toBe(101);
    const wrong = await handler(new Request('http://localhost/limits', { method: 'DELETE' }));
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET');
  });
});
