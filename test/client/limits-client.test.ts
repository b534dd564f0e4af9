/** The typed client against the real server over loopback: every method, every error. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  createLimitsClient,
  createLimitsState,
  generateOperatorToken,
  generateThrottleSecret,
  hashOperatorToken,
  hashThrottleSecret,
  type Limits,
  type LimitsClient,
  type PendingChange,
} from '../../src/index.js';
import type { RunningServer } from '../../src/server/node-http/serve.js';
import { closeServers, serveInProcess } from '../support/in-process.js';
import { TOKEN } from '../support/tokens.js';

afterAll(closeServers);

const BIG = 9_223_372_036_854_775_807n;
const SECRET = generateThrottleSecret();

let server: RunningServer;
let client: LimitsClient;

beforeAll(async () => {
  server = await serveInProcess({
    initial: createLimitsState({
      limits: { pegCap: BIG, rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: 1000n },
    }),
    adminToken: TOKEN,
  });
  // A base URL with a trailing slash works too.
  client = createLimitsClient({ baseUrl: `${server.url}/` });
});

afterAll(() => server.close());

describe('createLimitsClient against the real server', () => {
  test('every method, amounts as bigint both ways, exact at the int64 edge', async () => {
    const fed = await client.postEvents(
      [
        { type: 'blockConnected', height: 500 },
        { type: 'withdrawalRequested', id: 'w1', account: 'a b/c', amount: 700n, height: 500 },
        {
          type: 'accountLimitsSet',
          account: 'a b/c',
          limits: { pegCap: BIG, rollingWithdrawalBlocks: 10n, rollingWithdrawalCap: 800n },
        },
        { type: 'peggedTotalObserved', total: BIG - 1n },
        { type: 'throttleKeyAdded', name: 'ops-1', secretHash: hashThrottleSecret(SECRET) },
        { type: 'throttleKeyAdded', name: 'ops-2', secretHash: hashThrottleSecret(SECRET) },
        { type: 'throttleKeyRevoked', name: 'ops-2' },
      ],
      TOKEN,
    );
    expect(fed.ok && fed.status === 200 && (fed.value as Limits).availableToWithdraw).toBe(300n);

    const limits = await client.getLimits();
    expect(limits.ok).toBe(true);
    if (limits.ok) {
      expect(limits.value.pegCap).toBe(BIG);
      expect(limits.value.accountCaps['a b/c']?.pegCap).toBe(BIG);
    }
    const entry = await client.getAccountLimits('a b/c');
    expect(entry).toMatchObject({
      ok: true,
      status: 201,
      value: { pegCap: BIG, rollingWithdrawalCap: 800n },
    });

    expect(await client.checkWithdrawal('a b/c', 100n)).toMatchObject({
      ok: true,
      value: { ok: true, reason: null, limit: null, availableAt: null },
    });
    expect(await client.checkWithdrawal('a b/c', 301n)).toMatchObject({
      ok: true,
      value: { ok: false, reason: 'rolling_cap_exceeded', limit: 300n, availableAt: 644 },
    });
    expect(await client.checkDeposit('x', 1n)).toMatchObject({
      ok: true,
      value: { ok: true, availableAt: null },
    });
    expect(await client.checkDeposit('x', BIG)).toMatchObject({
      ok: true,
      value: { ok: false, reason: 'peg_cap_exceeded', limit: 1n },
    });

    const window = await client.getWindow();
    expect(window).toMatchObject({
      ok: true,
      value: {
        tip: 500,
        from: 357,
        to: 500,
        withdrawn: 700n,
        sums: [{ height: 500, amount: 700n }],
        nextRelease: { height: 644, amount: 700n },
      },
    });
    const own = await client.getWindow('a b/c');
    expect(own).toMatchObject({ ok: true, value: { account: 'a b/c', availableToWithdraw: 100n } });
    // No mint window set: the view says so (no cap, no room), and an account has none.
    expect(await client.getMintWindow()).toMatchObject({
      ok: true,
      value: { tip: 500, rollingWithdrawalBlocks: null, availableToMint: null, sums: [] },
    });
    expect(await client.getMintWindow('a b/c')).toMatchObject({
      ok: false,
      error: { status: 404, code: 'window_not_found' },
    });

    const integrity = await client.getIntegrity();
    expect(integrity).toEqual({
      ok: true,
      status: 200,
      value: {
        state: 'off',
        peggedTotal: expect.any(BigInt),
        reserves: null,
        reservesHeight: null,
        unbacked: null,
        maxUnbacked: null,
        reservesMaxAge: 6,
        tripped: null,
      },
    });

    const started = await client.startThrottle('ops-1', SECRET);
    expect(started).toMatchObject({ ok: true, value: { throttleModeInitiator: 'ops-1' } });
  });

  test('errors come back as the problem object, with its code, never thrown', async () => {
    const cases = [
      [await client.getAccountLimits('nobody'), 404, 'account_not_found'],
      [await client.getAccountLimits('a\u0007'), 400, 'invalid_account'],
      [await client.getWindow('nobody'), 404, 'window_not_found'],
      [await client.startThrottle('ops-1', generateThrottleSecret()), 401, 'invalid_credentials'],
      [await client.startThrottle('ops-2', SECRET), 403, 'key_revoked'],
      [await client.startThrottle('', SECRET), 400, 'invalid_request'],
      [await client.postEvents({ type: 'throttleEnded' }, 'wrong-token'), 401, 'invalid_token'],
      [
        await client.postEvents({ type: 'blockConnected', height: 1 }, TOKEN),
        409,
        'height_not_above_tip',
      ],
      [await client.checkWithdrawal('x', 0n), 0, 'invalid_amount'],
      [await client.checkWithdrawal('x', BIG + 1n), 0, 'invalid_amount'],
    ] as const;
    for (const [result, status, code] of cases) {
      expect(result.ok, code).toBe(false);
      if (!result.ok) {
        expect(result.error.code).toBe(code);
        expect(result.error.status).toBe(status);
        expect(result.error.message).toBe(result.error.detail);
      }
    }
  });

  test('no answer, or an answer that is not JSON, is a problem too', async () => {
    // A port nobody listens on.
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const nowhere = await createLimitsClient({ baseUrl: `http://127.0.0.1:${port}` }).getLimits();
    expect(nowhere.ok).toBe(false);
    if (!nowhere.ok) expect(nowhere.error).toMatchObject({ code: 'network_error', status: 0 });

    const html = createServer((_, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>not the service</html>');
    });
    await new Promise<void>((r) => html.listen(0, '127.0.0.1', r));
    const wrong = await createLimitsClient({
      baseUrl: `http://127.0.0.1:${(html.address() as AddressInfo).port}`,
    }).getLimits();
    await new Promise((r) => html.close(r));
    expect(wrong.ok).toBe(false);
    if (!wrong.ok) expect(wrong.error).toMatchObject({ code: 'invalid_response', status: 200 });
  });

  test('an injected fetch is used', async () => {
    const seen: string[] = [];
    const c = createLimitsClient({
      baseUrl: server.url,
      fetch: (input, init) => {
        seen.push(String(input));
        return fetch(input, init);
      },
    });
    expect((await c.getLimits()).ok).toBe(true);
    expect(seen).toEqual([`${server.url}/limits`]);
  });
});

describe('the client of the pending changes', () => {
  test('the client proposes (202), lists, approves and cancels a loosening, typed (ids and heights as numbers)', async () => {
    const gov1 = generateOperatorToken();
    const gov2 = generateOperatorToken();
    const governed = await serveInProcess({
      initial: createLimitsState(),
      operators: [
        { name: 'gov-1', tokenHash: hashOperatorToken(gov1), scopes: ['chain', 'limits'] },
        { name: 'gov-2', tokenHash: hashOperatorToken(gov2), scopes: ['limits'] },
      ],
      loosening: { delayBlocks: 6, quorum: 2 },
    });
    try {
      const c = createLimitsClient({ baseUrl: governed.url });
      expect(await c.postEvents([{ type: 'blockConnected', height: 100 }], gov1)).toMatchObject({
        status: 200,
      });
      const raise = { type: 'limitsSet', limits: { pegCap: BIG } } as const;
      expect(await c.postEvents({ type: 'limitsSet', limits: { pegCap: 5n } }, gov1)).toMatchObject(
        { status: 200 },
      );
      const proposed = await c.postEvents(raise, gov1);
      expect(proposed).toMatchObject({
        ok: true,
        status: 202,
        value: {
          id: 1,
          proposedAt: 100,
          effectiveAt: 106,
          delayBlocks: 6,
          quorum: 2,
          approvals: ['gov-1'],
        },
      });
      const listed = await c.getChanges(gov2);
      expect(listed.ok && listed.value.map((x) => [x.id, x.events])).toEqual([[1, [raise]]]);
      const second = await c.postEvents({ type: 'limitsSet', limits: {} }, gov2);
      expect(second.ok && (second.value as PendingChange).id).toBe(2);
      const cancelled = await c.cancelChange(2, gov1);
      expect(cancelled).toMatchObject({ ok: true, value: { id: 2, proposedBy: 'gov-2' } });
      const applied = await c.approveChange(1, gov2);
      expect(applied.ok && (applied.value as Limits).pegCap).toBe(BIG);
      const gone = await c.approveChange(1, gov2);
      expect(gone).toMatchObject({ ok: false, error: { status: 404, code: 'change_not_found' } });
      expect((await c.getChanges(gov1)).ok && (await c.getChanges(gov1))).toMatchObject({
        value: [],
      });
    } finally {
      await governed.close();
    }
  });
});

describe('the client and the validators', () => {
  test('a read asked again sends If-None-Match, and a 304 gives the answer parsed before (no parse)', async () => {
    const statuses: number[] = [];
    const sent: Array<string | null> = [];
    const counting = createLimitsClient({
      baseUrl: server.url,
      fetch: async (input, init) => {
        sent.push(new Headers(init?.headers).get('if-none-match'));
        const r = await fetch(input, init);
        statuses.push(r.status);
        return r;
      },
    });
    const first = await counting.getWindow();
    const second = await counting.getWindow();
    expect(statuses).toEqual([200, 304]);
    expect(sent[0]).toBeNull();
    expect(sent[1]).toMatch(/^"[0-9a-z]+-[0-9a-z]+"$/);
    // The very answer of the first read: nothing was parsed again.
    expect(second).toBe(first);
    // A change: the next read is a 200 with the new body.
    await client.postEvents([{ type: 'peggedTotalObserved', total: 5n }], TOKEN);
    await client.postEvents(
      [{ type: 'withdrawalRequested', id: 'validated', account: 'v', amount: 1n, height: 500 }],
      TOKEN,
    );
    const third = await counting.getWindow();
    expect(statuses[2]).toBe(200);
    expect(third).not.toBe(first);
  });

  test('subscribe still sees every change while reads are validated', async () => {
    const seen: bigint[] = [];
    const stop = client.subscribe((limits) => seen.push(limits.pegCap as bigint));
    try {
      await new Promise((r) => setTimeout(r, 200));
      for (const pegCap of [11n, 12n, 13n]) {
        await client.postEvents([{ type: 'limitsUpdated', limits: { pegCap } }], TOKEN);
        await client.getLimits();
      }
      const until = Date.now() + 5_000;
      while (!seen.includes(13n) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      expect(seen.slice(-3)).toEqual([11n, 12n, 13n]);
    } finally {
      stop();
    }
  });
});
