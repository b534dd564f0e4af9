import { describe, expect, test } from 'vitest';
import {
  applyAll,
  createFetchHandler,
  createLimitsState,
  createService,
  decodeJson,
  type EventLog,
  getLimits,
  type LimitsEvent,
  type LimitsState,
} from '../../src/index.js';
import { at } from '../support/helpers.js';
import { TOKEN } from '../support/tokens.js';

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

  test('requests that change nothing persist nothing: reads, refusals and no-op events', async () => {
    let calls = 0;
    const start = at(100);
    const service = createService({ state: start, adminToken: TOKEN, persist: () => void calls++ });
    const statuses = [
      // A read.
      (await service.handle({ method: 'GET', path: '/limits' })).status,
      // A malformed start (400), and an unknown key (401): refused, nothing applied.
      ...(await Promise.all(
        ['{}', '{"name":"nobody","secret":"0123456789abcdefghijklmnop"}'].map(
          async (body) =>
            (
              await service.handle({
                method: 'POST',
                path: '/start_throttle',
                headers: { 'content-type': 'application/json' },
                body,
              })
            ).status,
        ),
      )),
      // An event refused by the state (409), and one that changes nothing (200).
      (await service.handle(post({ type: 'blockConnected', height: 50 }))).status,
      (await service.handle(post({ type: 'throttleEnded' }))).status,
    ];
    expect(statuses).toEqual([200, 400, 401, 409, 200]);
    expect(calls).toBe(0);
    expect(service.state).toBe(start);
    // A change is persisted: the count above could have moved.
    expect((await service.handle(post({ type: 'blockConnected', height: 101 }))).status).toBe(200);
    expect(calls).toBe(1);
  });

  test('read answers at once from the state reads see, as handle does, and reuses the answer of an unchanged state', async () => {
    let release = () => {};
    const service = createService({
      state: at(100),
      adminToken: TOKEN,
      persist: async () => ({ durable: new Promise<void>((r) => (release = r)) }),
    });
    const get = { method: 'GET', path: '/limits' };
    const before = service.read(get);
    expect(service.read(get)).toBe(before);
    expect(await service.handle(get)).toEqual(before);
    // A change written but not yet durable is not what reads see.
    const change = service.handle(post({ type: 'blockConnected', height: 101 }));
    await new Promise((r) => setTimeout(r, 5));
    expect(service.read(get)).toBe(before);
    release();
    expect((await change).status).toBe(200);
    expect(service.read(get)).not.toBe(before);
    expect(service.read({ method: 'GET', path: '/nowhere' }).status).toBe(404);
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
    // With an operator, the path also takes Emily's POST /limits.
    expect(wrong.headers.get('allow')).toBe('GET, HEAD, POST');
  });
});

describe('the Fetch adapter admits a request before it reads its body', () => {
  const MiB = 1024 * 1024;

  /** A body of `size` bytes made as it is pulled, counting what was pulled. */
  function counted(size: number) {
    const seen = { pulled: 0 };
    const chunk = new Uint8Array(64 * 1024).fill(0x5b);
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (seen.pulled >= size) return controller.close();
        seen.pulled += chunk.length;
        controller.enqueue(chunk);
      },
    });
    return { stream, seen };
  }

  function request(path: string, headers: Record<string, string>, body: ReadableStream) {
    return new Request(`http://localhost${path}`, {
      method: 'POST',
      headers,
      body,
      duplex: 'half',
    } as RequestInit);
  }

  const handler = createFetchHandler({ state: at(100), adminToken: TOKEN });
  const json = { 'content-type': 'application/json' };

  test('an operator request without the token is answered 401 with not a byte of its body read', async () => {
    const { stream, seen } = counted(100 * MiB);
    const r = await handler(request('/admin/events', json, stream));
    expect(r.status).toBe(401);
    expect(decodeJson(await r.text())).toMatchObject({ code: 'invalid_token' });
    expect(seen.pulled).toBeLessThanOrEqual(64 * 1024); // a stream may pull one chunk ahead
  });

  test('a body not said to be JSON is answered 415 unread', async () => {
    const { stream, seen } = counted(100 * MiB);
    const r = await handler(request('/start_throttle', { 'content-type': 'text/plain' }, stream));
    expect(r.status).toBe(415);
    expect(seen.pulled).toBeLessThanOrEqual(64 * 1024);
  });

  test('a route that takes no body is answered without reading one', async () => {
    const { stream, seen } = counted(100 * MiB);
    const r = await handler(request('/window', json, stream));
    expect(r.status).toBe(405);
    expect(seen.pulled).toBeLessThanOrEqual(64 * 1024);
  });

  test('a body over the route cap is answered 413 as soon as the cap is passed', async () => {
    const { stream, seen } = counted(100 * MiB);
    const r = await handler(
      request('/admin/events', { ...json, authorization: `Bearer ${TOKEN}` }, stream),
    );
    expect(r.status).toBe(413);
    expect(decodeJson(await r.text())).toMatchObject({ code: 'payload_too_large' });
    // The 1 MiB the route takes, the chunk that passed it, and one pulled ahead.
    expect(seen.pulled).toBeLessThanOrEqual(MiB + 2 * 64 * 1024);
    expect(handler.state.tip).toBe(100);
  });

  test('a declared length over the cap is answered 413 before a byte is read', async () => {
    const { stream, seen } = counted(100 * MiB);
    const r = await handler(
      request('/start_throttle', { ...json, 'content-length': String(100 * MiB) }, stream),
    );
    expect(r.status).toBe(413);
    expect(seen.pulled).toBeLessThanOrEqual(64 * 1024);
  });

  test('a preflight is answered 204 with no body', async () => {
    const r = await handler(new Request('http://localhost/limits', { method: 'OPTIONS' }));
    expect(r.status).toBe(204);
    expect(r.headers.get('access-control-allow-methods')).toBe('GET, OPTIONS');
    expect(await r.text()).toBe('');
  });
});

describe('readiness (GET /readyz) over an event log', () => {
  test('ready while the log takes writes and is caught up, else 503 with the reason', async () => {
    const { readinessOf } = await import('../../src/http/service.js');
    const log = { writable: true, unavailable: undefined as string | undefined, catchingUp: false };
    const asLog = log as unknown as Parameters<typeof readinessOf>[0];
    expect(readinessOf(asLog)).toEqual({ ready: true });
    log.catchingUp = true;
    expect(readinessOf(asLog)).toMatchObject({ ready: false, code: 'catching_up' });
    log.writable = false;
    log.unavailable = 'the database is out of reach';
    expect(readinessOf(asLog)).toMatchObject({
      ready: false,
      code: 'store_unavailable',
      reason: expect.stringContaining('the database is out of reach'),
    });
    const service = createService({ state: at(1), health: () => readinessOf(asLog) });
    const r = service.read({ method: 'GET', path: '/readyz' });
    expect(r.status).toBe(503);
    expect(r.headers['retry-after']).toBe('1');
    expect(decodeJson(r.body)).toMatchObject({ code: 'store_unavailable' });
    expect(r.headers['access-control-allow-origin']).toBeUndefined();
  });
});

test('a log written elsewhere signals a conflict with the public LogConflict, and the service computes the change again on the newer state', async () => {
  const { LogConflict } = await import('../../src/index.js');
  const start = applyAll(
    createLimitsState({ limits: { rollingWithdrawalBlocks: 10n, rollingWithdrawalCap: 1000n } }),
    [{ type: 'blockConnected', height: 1 }],
  );
  if (!start.ok) throw start.error;
  const base = start.state;
  const r = applyAll(base, [{ type: 'blockConnected', height: 2 }]);
  if (!r.ok) throw r.error;
  // Another writer appended a block first: the first append is refused with its state.
  const other = r.state;
  let newest = base;
  let position = 0;
  const positions = new WeakMap<LimitsState, number>([[base, 0]]);
  let refusedOnce = false;
  const log: EventLog = {
    get state() {
      return newest;
    },
    get position() {
      return position;
    },
    writable: true,
    unavailable: undefined,
    catchingUp: false,
    positionOf: (s) => positions.get(s),
    async append(_events, next, from) {
      if (!refusedOnce) {
        refusedOnce = true;
        newest = other;
        positions.set(other, ++position);
        throw new LogConflict(other, 'another writer was first');
      }
      expect(from).toBe(newest);
      newest = next;
      positions.set(next, ++position);
      return { position, durable: Promise.resolve() };
    },
    catchUp: async () => undefined,
    follow: () => () => undefined,
    snapshot: async () => undefined,
    close: async () => undefined,
  };
  const service = createService({ log, adminToken: 't' });
  const answer = await service.handle({
    method: 'POST',
    path: '/admin/events',
    headers: { 'content-type': 'application/json', authorization: 'Bearer t' },
    body: '[{"type":"withdrawalRequested","id":"w1","account":"a","amount":5,"height":1}]',
  });
  expect(answer.status).toBe(200);
  // Computed again on the other writer's block: its tip, and the withdrawal counted.
  expect(service.state.tip).toBe(2);
  expect(getLimits(service.state).availableToWithdraw).toBe(995n);
  expect(position).toBe(2);
});

describe('the batch port (Service.applyBatch): every operator batch, as data', () => {
  const feeder = { name: 'feeder', scopes: ['chain'] as const };
  const governor = { name: 'gov', scopes: ['chain', 'limits'] as const };
  function recorded() {
    const batches: Array<{ events: ReadonlyArray<LimitsEvent>; meta: unknown }> = [];
    const service = createService({
      state: at(100),
      loosening: { delayBlocks: 6, quorum: 0 },
      persist: (events, _next, _base, meta) => {
        batches.push({ events, meta });
      },
    });
    return { service, batches };
  }

  test('applied: the state after it, persisted under the request id and address given, with the operator as the actor', async () => {
    const { service, batches } = recorded();
    const outcome = await service.applyBatch({
      events: [{ type: 'blockConnected', height: 101 }],
      operator: feeder,
      requestId: 'stacks-block:ab12',
      remote: '10.0.0.7',
    });
    expect(outcome).toMatchObject({ outcome: 'applied', events: [{ height: 101 }] });
    if (outcome.outcome !== 'applied') throw new Error('not applied');
    expect(service.state).toBe(outcome.state);
    expect(batches).toEqual([
      {
        events: [{ type: 'blockConnected', height: 101 }],
        meta: {
          actor: { kind: 'operator', name: 'feeder' },
          requestId: 'stacks-block:ab12',
          remote: '10.0.0.7',
        },
      },
    ]);
  });

  test('refused: the rule that refused it, the event at fault and its code, and nothing persisted', async () => {
    const { service, batches } = recorded();
    const scope = await service.applyBatch({
      events: [{ type: 'blockConnected', height: 101 }, { type: 'throttleEnded' }],
      operator: feeder,
    });
    expect(scope).toMatchObject({ outcome: 'refused', by: 'operator' });
    if (scope.outcome !== 'refused') throw new Error('not refused');
    expect([scope.error.code, scope.error.event, scope.error.path]).toEqual([
      'scope_denied',
      1,
      '[1]',
    ]);
    const bounds = await service.applyBatch({
      events: [{ type: 'blockConnected', height: 100 + 145 }],
      operator: feeder,
    });
    expect(bounds).toMatchObject({ outcome: 'refused', by: 'chain-bounds' });
    const state = await service.applyBatch({
      events: [{ type: 'withdrawalRejected', id: 'nope' }],
      operator: feeder,
    });
    expect(state).toMatchObject({ outcome: 'refused', by: 'state' });
    if (state.outcome !== 'refused') throw new Error('not refused');
    expect([state.error.code, state.error.event]).toEqual(['unknown_withdrawal', 0]);
    // The override passes the bounds only for an operator holding chain and limits.
    const overridden = await service.applyBatch({
      events: [{ type: 'blockConnected', height: 100 + 145 }],
      operator: governor,
      override: true,
    });
    expect(overridden.outcome).toBe('applied');
    const feederOverride = await service.applyBatch({
      events: [{ type: 'blockConnected', height: 400 }],
      operator: feeder,
      override: true,
    });
    expect(feederOverride).toMatchObject({ outcome: 'refused', by: 'operator' });
    expect(batches).toHaveLength(1);
  });

  test('waiting: a loosening becomes a pending change, its proposal persisted', async () => {
    const { service, batches } = recorded();
    const tighten = await service.applyBatch({
      events: [{ type: 'limitsSet', limits: { perWithdrawalCap: 10n } }],
      operator: governor,
    });
    expect(tighten.outcome).toBe('applied');
    const outcome = await service.applyBatch({
      events: [{ type: 'limitsSet', limits: {} }],
      operator: governor,
    });
    expect(outcome).toMatchObject({
      outcome: 'waiting',
      change: { id: 1, proposedBy: 'gov', effectiveAt: 106 },
    });
    expect(batches.map((b) => b.events[0]?.type)).toEqual(['limitsSet', 'changeProposed']);
  });

  test('a batch and a request go through one queue, in arrival order, and the port rejects only what could not be kept', async () => {
    const service = createService({
      state: at(100),
      adminToken: TOKEN,
      persist: async (events) => {
        if (events.some((e) => e.type === 'blockConnected' && e.height === 103))
          throw new Error('disk full');
      },
    });
    const [viaPort, viaHttp] = await Promise.all([
      service.applyBatch({ events: [{ type: 'blockConnected', height: 101 }], operator: feeder }),
      service.handle(post({ type: 'blockConnected', height: 102 })),
    ]);
    expect([viaPort.outcome, viaHttp.status]).toEqual(['applied', 200]);
    await expect(
      service.applyBatch({ events: [{ type: 'blockConnected', height: 103 }], operator: feeder }),
    ).rejects.toThrow('disk full');
    expect(getLimits(service.state)).toEqual(getLimits(at(102)));
    await expect(
      service.applyBatch({ events: [], operator: feeder, requestId: 'no spaces allowed' }),
    ).rejects.toMatchObject({ code: 'invalid_request', path: 'requestId' });
  });
});
