/**
 * Read your writes: `Peg-Limits-Min-Position: n` is answered once the server
 * shows position n, or after 2 s with 503 `catching_up`; a malformed one is a 400. The
 * client sends it after a change it made. (Across replicas: `replicas-serving.test.ts`.)
 */
import { afterEach, describe, expect, test } from 'vitest';
import { createLimitsClient, decodeJson, encodeJson } from '../../../src/index.js';
import { MIN_POSITION_WAIT_MS, type RunningServer } from '../../../src/server/node-http/serve.js';
import { closeServers, serveInProcess } from '../../support/in-process.js';
import { TOKEN } from '../../support/tokens.js';

afterEach(closeServers);

const serve = () => serveInProcess({ adminToken: TOKEN, metrics: false });

const post = (s: RunningServer, events: unknown) =>
  fetch(`${s.url}/admin/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: encodeJson(events),
  });

const read = (s: RunningServer, position: string, path = '/limits') =>
  fetch(`${s.url}${path}`, { headers: { 'peg-limits-min-position': position } });

describe('Peg-Limits-Min-Position', () => {
  test('a position already shown is answered at once', async () => {
    const s = await serve();
    await (await post(s, { type: 'blockConnected', height: 5 })).text();
    for (const position of ['0', '1', '001']) {
      const r = await read(s, position);
      expect(r.status, position).toBe(200);
      expect(r.headers.get('peg-limits-position')).toBe('1');
      await r.text();
    }
  });

  test('a malformed one is a 400 problem that says what it takes, on every route', async () => {
    const s = await serve();
    for (const bad of ['-1', '1.5', 'x', '', '1e3', '0x10', '7, 8']) {
      for (const path of ['/limits', '/window', '/nowhere']) {
        const r = await read(s, bad, path);
        const body = decodeJson(await r.text()) as { code: string; detail: string };
        if (path === '/nowhere') {
          // Admission comes first: a route that does not exist is a 404 whatever it carries.
          expect(r.status).toBe(404);
          continue;
        }
        expect(r.status, JSON.stringify(bad)).toBe(400);
        expect(body.code).toBe('bad_request');
        expect(body.detail).toMatch(/Peg-Limits-Min-Position must be a non-negative integer/);
      }
    }
    // Nothing changed.
    expect((await fetch(`${s.url}/limits`)).headers.get('peg-limits-position')).toBe('0');
  });

  test('a position not shown yet waits for it, woken by the change, not by a timer', async () => {
    const s = await serve();
    const t = performance.now();
    const waiting = read(s, '1');
    await new Promise((r) => setTimeout(r, 150));
    await (await post(s, { type: 'blockConnected', height: 5 })).text();
    const r = await waiting;
    const took = performance.now() - t;
    expect(r.status).toBe(200);
    expect(r.headers.get('peg-limits-position')).toBe('1');
    await r.text();
    // Answered right after the change (150 ms in), long before the 2 s bound.
    expect(took).toBeLessThan(MIN_POSITION_WAIT_MS / 2);
  });

  test('a position far in the future is answered 503 catching_up with Retry-After after 2 s at most', async () => {
    const s = await serve();
    const t = performance.now();
    const [far, huge] = await Promise.all([
      read(s, '1000000'),
      read(s, '99999999999999999999999999'),
    ]);
    const took = performance.now() - t;
    for (const r of [far, huge]) {
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toBe('1');
      expect(decodeJson(await r.text())).toMatchObject({ code: 'catching_up' });
    }
    expect(took).toBeGreaterThanOrEqual(MIN_POSITION_WAIT_MS - 50);
    // Timers may run late on a loaded machine; never hanging means well under a minute.
    expect(took).toBeLessThan(MIN_POSITION_WAIT_MS + 5_000);
    // Reads without it go on meanwhile, and after.
    expect((await fetch(`${s.url}/limits`)).status).toBe(200);
  });

  test('a page on another origin may send it (preflight) and read the position (exposed)', async () => {
    const s = await serve();
    const pre = await fetch(`${s.url}/limits`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://bridge.example',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'peg-limits-min-position',
      },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-headers')).toMatch(/peg-limits-min-position/);
    const r = await fetch(`${s.url}/limits`, { headers: { origin: 'https://bridge.example' } });
    expect(r.headers.get('access-control-expose-headers')).toBe('peg-limits-position, etag');
  });

  test('createLimitsClient sends it after a change it made, with that change position', async () => {
    const s = await serve();
    const sent: Array<string | null> = [];
    const client = createLimitsClient({
      baseUrl: s.url,
      fetch: (input, init) => {
        sent.push(new Headers(init?.headers).get('peg-limits-min-position'));
        return fetch(input, init);
      },
    });
    expect((await client.getLimits()).ok).toBe(true);
    await (await post(s, { type: 'blockConnected', height: 5 })).text();
    const r = await client.postEvents({ type: 'blockConnected', height: 6 }, TOKEN);
    expect(r.ok).toBe(true);
    expect((await client.getLimits()).ok).toBe(true);
    // Before its own change none; the change itself none; after it, the change's position.
    expect(sent).toEqual([null, null, '2']);
  });
});
