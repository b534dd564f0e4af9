/**
 * Alerts when throttle mode starts or ends (SPEC §10): posted once durable, retried on
 * refusals and time-outs, never delaying the request that caused them.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import {
  createLimitsState,
  decodeJson,
  encodeJson,
  generateThrottleSecret,
  hashThrottleSecret,
} from '../../src/index.js';
import { ALERT_RETRY_MS, ALERT_TIMEOUT_MS, createAlerts } from '../../src/server/alerts.js';
import { openDataLog } from '../../src/server/data-log.js';
import { type RunningServer, startServer } from '../../src/server/serve.js';
import { runToEnd, tempDir, waitFor } from '../support/proc.js';

const TOKEN = 'operator-token-0123456789';
const SECRET = generateThrottleSecret();
const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0)) await f();
});

/** A receiver that answers each delivery as `answer` says (or never, for 'hang'). */
async function receiver(answer: (n: number) => number | 'hang') {
  const got: Array<{ at: number; body: Record<string, unknown> }> = [];
  let n = 0;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      const a = answer(++n);
      got.push({ at: Date.now(), body: decodeJson(body) as Record<string, unknown> });
      if (a === 'hang') return;
      res.writeHead(a);
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  cleanup.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got };
}

async function serve(urls: string[], timeoutMs?: number): Promise<RunningServer> {
  const s = await startServer({
    log: await openDataLog({ dir: tempDir(), initial: createLimitsState() }),
    port: 0,
    adminToken: TOKEN,
    alerts: { urls, firstDelayMs: 50, timeoutMs },
    metrics: false,
  });
  cleanup.push(() => s.close());
  const r = await post(s, '/admin/events', [
    { type: 'throttleKeyAdded', name: 'ops-1', secretHash: hashThrottleSecret(SECRET) },
  ]);
  expect(r.status).toBe(200);
  return s;
}

async function post(s: RunningServer, path: string, body: unknown) {
  const started = performance.now();
  const r = await fetch(`${s.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: encodeJson(body),
  });
  await r.text();
  return { status: r.status, ms: performance.now() - started };
}

describe('--alert-url', () => {
  test('a throttle start and end are posted once durable, retried past refusals, and never delay the request', async () => {
    // Refuses the first two deliveries.
    const hook = await receiver((n) => (n <= 2 ? 500 : 204));
    const s = await serve([hook.url]);
    const started = await post(s, '/start_throttle', { name: 'ops-1', secret: SECRET });
    expect(started.status).toBe(200);
    // Answered at once, while the receiver still refuses.
    expect(started.ms).toBeLessThan(2_000);
    await waitFor(() => hook.got.length >= 3, 10_000);
    const delivered = hook.got[2]!.body;
    expect(delivered).toMatchObject({ type: 'throttleStarted', initiator: 'ops-1' });
    expect(delivered.position).toBe(BigInt(s.position));
    expect(Number.isNaN(Date.parse(delivered.at as string))).toBe(false);
    expect(hook.got.map((g) => g.body)).toEqual([delivered, delivered, delivered]);
    // Backoff: the pauses grow.
    const gaps = [hook.got[1]!.at - hook.got[0]!.at, hook.got[2]!.at - hook.got[1]!.at];
    expect(gaps[1]!).toBeGreaterThanOrEqual(gaps[0]!);

    // Starting it again changes nothing: no alert. Ending it: one.
    expect((await post(s, '/start_throttle', { name: 'ops-1', secret: SECRET })).status).toBe(200);
    expect((await post(s, '/admin/events', [{ type: 'throttleEnded' }])).status).toBe(200);
    await waitFor(() => hook.got.length >= 4, 10_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(hook.got.length).toBe(4);
    expect(hook.got[3]!.body).toMatchObject({ type: 'throttleEnded', initiator: 'ops-1' });
  });

  test('a receiver that hangs is timed out and retried; a failed alert never fails the change', async () => {
    const hook = await receiver((n) => (n === 1 ? 'hang' : 200));
    const s = await serve([hook.url], 300);
    const r = await post(s, '/admin/events', [{ type: 'throttleStarted', initiator: 'ops-1' }]);
    expect(r.status).toBe(200);
    await waitFor(() => hook.got.length >= 2, 10_000);
    expect(hook.got[1]!.at - hook.got[0]!.at).toBeGreaterThanOrEqual(300);
    expect(hook.got[1]!.body).toMatchObject({ type: 'throttleStarted', initiator: 'ops-1' });
  });

  test('the defaults: retried for at least 10 minutes, 5 s an attempt; only http(s)', () => {
    expect(ALERT_RETRY_MS).toBeGreaterThanOrEqual(10 * 60_000);
    expect(ALERT_TIMEOUT_MS).toBe(5_000);
    expect(() => createAlerts({ urls: ['ftp://x.example/'] })).toThrow(/http\(s\)/);
  });

  test('the command refuses an --alert-url that is not http(s) with exit code 2', async () => {
    const r = await runToEnd('node', ['dist/cli.js', 'serve', '--alert-url', 'mailto:ops@x']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--alert-url takes an http\(s\) URL, got mailto:ops@x/);
  });
});
