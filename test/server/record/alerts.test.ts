/**
 * Alerts (`--alert-url`): every change that is not chain traffic, naming its actor and what
 * changed, signed, delivered from the audit trail at least once and in order per URL,
 * resumed after a crash, retried past refusals and time-outs, and never delaying the change.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import {
  createLimitsState,
  decodeJson,
  encodeJson,
  generateOperatorToken,
  hashOperatorToken,
  hashThrottleSecret,
} from '../../../src/index.js';
import {
  ALERT_TIMEOUT_MS,
  createAlerts,
  memoryCursors,
} from '../../../src/server/record/alerts.js';
import { closeServers, serveInProcess } from '../../support/in-process.js';
import {
  CLI,
  freePort,
  killGroup,
  type Proc,
  runToEnd,
  startServe,
  tempDir,
  waitFor,
} from '../../support/proc.js';
import { TOKEN } from '../../support/tokens.js';

const KEY_SECRET = 'a-throttle-secret-of-enough-length';
const ALERT_SECRET = 'an-alert-secret-of-enough-length';
const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

interface Got {
  at: number;
  body: Record<string, unknown>;
  text: string;
  headers: IncomingMessage['headers'];
}

/** A receiver that answers each delivery as `answer` says ('hang': never; 'stream': 200 and a body without end). */
async function receiver(answer: (n: number) => number | 'hang' | 'stream' = () => 204, port = 0) {
  const got: Got[] = [];
  let n = 0;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.on('data', (c: Buffer) => {
      text += c.toString();
    });
    req.on('end', () => {
      const a = answer(++n);
      got.push({
        at: Date.now(),
        body: decodeJson(text) as Record<string, unknown>,
        text,
        headers: req.headers,
      });
      if (a === 'hang') return;
      if (a === 'stream') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const chunk = Buffer.alloc(1 << 16, 120);
        const more = () => {
          while (!res.destroyed && res.write(chunk));
          if (!res.destroyed) res.once('drain', more);
        };
        more();
        return;
      }
      res.writeHead(a);
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  const close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  cleanup.push(close);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook?token=t`,
    got,
    close,
  };
}

async function serve(urls: string[], extra: { timeoutMs?: number; secret?: string } = {}) {
  const s = await serveInProcess({
    adminToken: TOKEN,
    alerts: { urls, firstDelayMs: 50, ...extra },
    metrics: true,
  });
  cleanup.push(closeServers);
  return s;
}

async function post(
  s: { url: string },
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const started = performance.now();
  const r = await fetch(`${s.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, ...headers },
    body: encodeJson(body),
  });
  await r.text();
  return { status: r.status, ms: performance.now() - started };
}

const types = (got: Got[]) => got.map((g) => g.body.type);

describe('alerts for every operator change', () => {
  test('an alert names its type, position, time, actor and what changed, and chain traffic raises none', async () => {
    const hook = await receiver();
    const s = await serve([hook.url]);
    const admin = { kind: 'operator', name: 'admin' };
    expect(
      (
        await post(s, '/admin/events', [
          { type: 'blockConnected', height: 100 },
          { type: 'throttleKeyAdded', name: 'ops-1', secretHash: hashThrottleSecret(KEY_SECRET) },
          { type: 'limitsSet', limits: { perWithdrawalCap: 9_223_372_036_854_775_807n } },
          { type: 'accountLimitsSet', account: 'alice', limits: { pegCap: 5n } },
        ])
      ).status,
    ).toBe(200);
    expect((await post(s, '/admin/events', [{ type: 'blockConnected', height: 101 }])).status).toBe(
      200,
    );
    expect((await post(s, '/start_throttle', { name: 'ops-1', secret: KEY_SECRET })).status).toBe(
      200,
    );
    expect(
      (await post(s, '/admin/events', [{ type: 'throttleKeyRevoked', name: 'ops-1' }])).status,
    ).toBe(200);
    expect(
      (await post(s, '/admin/events', [{ type: 'throttleKeyReactivated', name: 'ops-1' }])).status,
    ).toBe(200);
    expect((await post(s, '/admin/events', [{ type: 'throttleEnded' }])).status).toBe(200);
    // A jump past the chain bounds is refused, and the operators hear of it.
    expect(
      (await post(s, '/admin/events', [{ type: 'blockConnected', height: 9_000_000 }])).status,
    ).toBe(409);
    await waitFor(() => hook.got.length >= 8, 10_000);
    await new Promise((r) => setTimeout(r, 200));
    expect(types(hook.got)).toEqual([
      'throttleKeyAdded',
      'limitsChanged',
      'accountLimitsChanged',
      'throttleStarted',
      'throttleKeyRevoked',
      'throttleKeyReactivated',
      'throttleEnded',
      'chainBoundRefused',
    ]);
    const [key, limits, account, started, , , ended, refused] = hook.got.map((g) => g.body);
    expect(key).toMatchObject({ name: 'ops-1', position: 1n, actor: admin });
    // int64 exact, as the batch said it.
    expect(hook.got[1]!.text).toContain('"perWithdrawalCap":9223372036854775807');
    expect(limits).toMatchObject({ position: 1n, actor: admin });
    expect(account).toMatchObject({ account: 'alice', limits: { pegCap: 5n } });
    expect(started).toMatchObject({
      initiator: 'ops-1',
      position: 3n,
      actor: { kind: 'throttleKey', name: 'ops-1' },
    });
    expect(ended).toMatchObject({ initiator: 'ops-1', actor: admin });
    expect(refused).toMatchObject({ actor: admin, path: '[0].height' });
    expect(String(refused!.detail)).toContain('9000000');
    for (const g of hook.got) expect(Number.isNaN(Date.parse(g.body.at as string))).toBe(false);
    // Ids: the record's position and the alert's place in it.
    expect(hook.got.slice(0, 3).map((g) => g.headers['peg-limits-alert-id'])).toEqual([
      '1-0',
      '1-1',
      '1-2',
    ]);
  });

  test('pending changes: proposed, approved, applied, dropped and cancelled, each told', async () => {
    const hook = await receiver();
    const gov = generateOperatorToken();
    const s = await serveInProcess({
      initial: createLimitsState(),
      adminToken: TOKEN,
      operators: [{ name: 'gov', tokenHash: hashOperatorToken(gov), scopes: ['limits', 'keys'] }],
      loosening: { delayBlocks: 2, quorum: 2 },
      alerts: { urls: [hook.url], firstDelayMs: 50 },
    });
    cleanup.push(() => s.close());
    const raise = (cap: bigint) => ({ type: 'limitsSet', limits: { pegCap: cap } });
    await post(s, '/admin/events', [{ type: 'blockConnected', height: 10 }, raise(1n)]);
    expect((await post(s, '/admin/events', [raise(2n)])).status).toBe(202);
    const approve = await fetch(`${s.url}/admin/changes/1/approve`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gov}` },
    });
    expect(approve.status).toBe(200);
    expect((await post(s, '/admin/events', [raise(3n)])).status).toBe(202);
    await post(s, '/admin/events', [{ type: 'blockConnected', height: 11 }]);
    await post(s, '/admin/events', [{ type: 'blockConnected', height: 12 }]);
    expect((await post(s, '/admin/events', [raise(4n)])).status).toBe(202);
    await post(s, '/admin/events', [{ type: 'throttleStarted', initiator: 'ops-x' }]);
    await waitFor(() => types(hook.got).includes('throttleStarted'), 10_000);
    expect(types(hook.got)).toEqual([
      'limitsChanged',
      'changeProposed',
      'changeApproved',
      'changeApplied',
      'changeProposed',
      'changeApplied',
      'changeProposed',
      'changeCancelled',
      'throttleStarted',
    ]);
    const bodies = hook.got.map((g) => g.body);
    expect(bodies[1]).toMatchObject({
      id: 1n,
      effectiveAt: 12n,
      quorum: 2n,
      actor: { kind: 'operator', name: 'admin' },
      // What it loosens, field by field, before and after.
      loosens: [
        { kind: 'cap', account: null, field: 'pegCap', before: 1n, after: 2n, view: 'effective' },
      ],
    });
    expect(bodies[2]).toMatchObject({
      id: 1n,
      by: 'gov',
      actor: { kind: 'operator', name: 'gov' },
    });
    // Applied at its height, inside the feeder's block: the system did it.
    expect(bodies[5]).toMatchObject({ id: 2n });
    expect(bodies[7]).toMatchObject({ id: 3n, by: null, reason: 'throttle mode started' });
  });
});

describe('delivery', () => {
  test('signed in the Stripe scheme: the receiver of docs/operating.md accepts it, and a changed byte fails', async () => {
    const hook = await receiver();
    const s = await serve([hook.url], { secret: ALERT_SECRET });
    await post(s, '/admin/events', [{ type: 'throttleStarted', initiator: 'ops-1' }]);
    await waitFor(() => hook.got.length >= 1, 10_000);
    const page = readFileSync('docs/operating.md', 'utf8');
    const from = page.indexOf('```js\n// verify a peg-limits alert');
    expect(from).toBeGreaterThan(0);
    const code = page.slice(from + 6, page.indexOf('```', from + 6));
    expect(code.trim().split('\n').length).toBeLessThanOrEqual(10);
    const file = join(tempDir(), 'verify.mjs');
    writeFileSync(file, code);
    const { verifyAlert } = (await import(file)) as {
      verifyAlert: (secret: string, header: string, body: string) => boolean;
    };
    const { text, headers } = hook.got[0]!;
    const header = String(headers['peg-limits-signature']);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifyAlert(ALERT_SECRET, header, text)).toBe(true);
    expect(verifyAlert(ALERT_SECRET, header, text.replace('ops-1', 'ops-2'))).toBe(false);
    expect(verifyAlert('another-secret-of-enough-length', header, text)).toBe(false);
  });

  test('delivery never delays a change: refusals are retried in order with growing pauses, and hanging or endless receivers let go', async () => {
    // Refuses twice, then hangs once, then streams a body without end, then takes.
    const hook = await receiver((n) =>
      n <= 2 ? 500 : n === 3 ? 'hang' : n === 4 ? 'stream' : 204,
    );
    const s = await serve([hook.url], { timeoutMs: 300 });
    const r = await post(s, '/admin/events', [{ type: 'throttleStarted', initiator: 'ops-1' }]);
    expect(r.status).toBe(200);
    expect(r.ms).toBeLessThan(2_000);
    await post(s, '/admin/events', [{ type: 'throttleEnded' }]);
    await waitFor(() => hook.got.length >= 5, 10_000);
    // The first alert until it was taken (the stream answered 200 at once), then the next.
    expect(types(hook.got)).toEqual([
      'throttleStarted',
      'throttleStarted',
      'throttleStarted',
      'throttleStarted',
      'throttleEnded',
    ]);
    // Pauses of 50, then 100 ms (sleeps take at least their time; a busy machine adds).
    expect(hook.got[1]!.at - hook.got[0]!.at).toBeGreaterThanOrEqual(45);
    expect(hook.got[2]!.at - hook.got[1]!.at).toBeGreaterThanOrEqual(90);
    expect(hook.got[3]!.at - hook.got[2]!.at).toBeGreaterThanOrEqual(300);
    expect(new Set(hook.got.slice(0, 4).map((g) => g.headers['peg-limits-alert-id'])).size).toBe(1);
  });

  test('peg_limits_alerts_pending counts the backlog while a receiver refuses, and drains', async () => {
    let refuse = true;
    const hook = await receiver(() => (refuse ? 503 : 204));
    const s = await serve([hook.url]);
    await post(s, '/admin/events', [
      { type: 'throttleKeyAdded', name: 'ops-2', secretHash: hashThrottleSecret(KEY_SECRET) },
      { type: 'limitsSet', limits: { pegCap: 5n } },
    ]);
    const pending = async () =>
      Number(
        /^peg_limits_alerts_pending (\d+)$/m.exec(
          await (await fetch(`${s.url}/metrics`)).text(),
        )?.[1],
      );
    await waitFor(async () => (await pending()) === 2, 10_000);
    refuse = false;
    await waitFor(async () => (await pending()) === 0, 10_000);
    expect(types(hook.got).slice(-2)).toEqual(['throttleKeyAdded', 'limitsChanged']);
  });

  test('the defaults are 5 s an attempt, http(s) URLs only and a secret of 22 characters at least', () => {
    expect(ALERT_TIMEOUT_MS).toBe(5_000);
    const source = {
      log: { audit: async () => [], position: 0 } as never,
      cursors: memoryCursors(),
    };
    expect(() => createAlerts({ urls: ['ftp://x.example/'] }, source)).toThrow(/http\(s\)/);
    expect(() => createAlerts({ urls: ['http://x.example/'], secret: 'short' }, source)).toThrow(
      /22 characters/,
    );
  });

  test('the command refuses an --alert-url that is not http(s), and an --alert-secret too short, with exit code 2', async () => {
    const r = await runToEnd('node', [CLI, 'serve', '--alert-url', 'mailto:ops@x']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--alert-url takes an http\(s\) URL, got mailto:ops@x/);
    const s = await runToEnd('node', [
      CLI,
      'serve',
      '--alert-url',
      'http://127.0.0.1:1/h',
      '--alert-secret',
      'short',
    ]);
    expect(s.code).toBe(2);
    expect(s.stderr).toMatch(/--alert-secret has 5 characters/);
  });
});

describe('durable', () => {
  test('a receiver that is down while the server is SIGKILLed gets every alert after the restart, each once after deduplication, in order', async () => {
    const dir = tempDir();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/hook`;
    const procs: Proc[] = [];
    cleanup.push(() => {
      for (const p of procs) killGroup(p);
    });
    const start = async () => {
      const p = await startServe(
        ['--quiet', '--data', dir, '--alert-url', url, '--alert-secret', ALERT_SECRET],
        { PEG_LIMITS_ADMIN_TOKEN: TOKEN },
      );
      procs.push(p);
      return p;
    };
    let p = await start();
    // The receiver is down: nothing listens on its port.
    const sent: string[] = [];
    for (let i = 1; i <= 6; i++) {
      expect(
        (await post(p, '/admin/events', [{ type: 'limitsSet', limits: { pegCap: BigInt(i) } }]))
          .status,
      ).toBe(200);
      sent.push(`${i + 0}`);
    }
    expect(
      (await post(p, '/admin/events', [{ type: 'throttleStarted', initiator: 'ops-9' }])).status,
    ).toBe(200);
    killGroup(p, 'SIGKILL');
    await p.exited;
    p = await start();
    expect((await post(p, '/admin/events', [{ type: 'throttleEnded' }])).status).toBe(200);
    const hook = await receiver(() => 204, port);
    await waitFor(
      () => new Set(hook.got.map((g) => g.headers['peg-limits-alert-id'])).size >= 8,
      20_000,
    );
    const once = new Map<string, Got>();
    for (const g of hook.got) once.set(String(g.headers['peg-limits-alert-id']), g);
    const delivered = [...once.values()].map((g) => g.body);
    expect(delivered.map((b) => b.type)).toEqual([
      ...Array.from({ length: 6 }, () => 'limitsChanged'),
      'throttleStarted',
      'throttleEnded',
    ]);
    expect(delivered.slice(0, 6).map((b) => (b.limits as { pegCap: bigint }).pegCap)).toEqual([
      1n,
      2n,
      3n,
      4n,
      5n,
      6n,
    ]);
    expect(delivered.map((b) => Number(b.position))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // And once taken, not again after another restart.
    p.child.kill('SIGTERM');
    await p.exited;
    const count = hook.got.length;
    p = await start();
    await new Promise((r) => setTimeout(r, 1_500));
    expect(hook.got.length).toBe(count);
  }, 60_000);
});
