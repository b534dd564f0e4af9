/**
 * `GET /events`: the stream of changes, its cap, its slow subscribers, and the
 * client's `subscribe`.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { createLimitsClient, createLimitsState, encodeJson, type Limits } from '../../src/index.js';
import type { RunningServer, ServerLimits } from '../../src/server/node-http/serve.js';
import { closeServers, serveInProcess } from '../support/in-process.js';
import { waitFor } from '../support/proc.js';
import { TOKEN } from '../support/tokens.js';

const BIG = 9_223_372_036_854_775_807n;
afterEach(closeServers);

const serve = (limits: Partial<ServerLimits> = {}, logLine?: (line: string) => void) =>
  serveInProcess({
    initial: createLimitsState({ limits: { pegCap: BIG } }),
    adminToken: TOKEN,
    metrics: false,
    connectionLimits: limits,
    logRequestText: logLine,
  });

async function post(s: RunningServer, events: unknown) {
  const r = await fetch(`${s.url}/admin/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: encodeJson(events),
  });
  expect(r.status).toBe(200);
  await r.text();
}

/** Reads a stream's events as they come. */
async function listen(url: string, headers: Record<string, string> = {}, path = '/events') {
  const controller = new AbortController();
  const r = await fetch(`${url}${path}`, { headers, signal: controller.signal });
  const got: Array<{ event: string; id: string | undefined; data: string; at: number }> = [];
  const comments: number[] = [];
  const reader = r.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (block.startsWith(':')) comments.push(performance.now());
          const lines = block.split('\n').filter((l) => !l.startsWith(':'));
          const field = (name: string) =>
            lines.find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2);
          const event = field('event');
          if (event !== undefined)
            got.push({ event, id: field('id'), data: field('data') ?? '', at: performance.now() });
        }
      }
    } catch {
      // aborted
    }
  })();
  return { response: r, got, comments, stop: () => controller.abort() };
}

/** A client that sends `request` (raw HTTP) to `s` and never reads what comes back. */
async function nonReader(s: RunningServer, request: string): Promise<Socket> {
  const socket = connect(Number(new URL(s.url).port), '127.0.0.1');
  socket.on('error', () => undefined);
  await new Promise<void>((r) => socket.once('connect', () => r()));
  socket.write(request);
  socket.pause(); // never reads (and may not notice that the server closed it)
  return socket;
}

/** Sets `count` account entries (about 210 bytes each in a limits body), to make events large. */
async function largeEntries(s: RunningServer, count: number): Promise<void> {
  const accountCaps: Record<string, { pegCap: bigint; perWithdrawalCap: bigint }> = {};
  for (let i = 0; i < count; i++)
    accountCaps[`account-${String(i).padStart(5, '0')}`] = { pegCap: BIG, perWithdrawalCap: BIG };
  await post(s, [{ type: 'limitsSet', limits: { accountCaps } }]);
}

describe('GET /events', () => {
  test('only a GET opens a stream: HEAD /events is the 404 of a service without one, and counts no stream', async () => {
    const s = await serve();
    const r = await fetch(`${s.url}/events`, { method: 'HEAD' });
    expect(r.status).toBe(404);
    expect(r.headers.get('content-type')).toBe('application/problem+json');
    expect(s.streams).toBe(0);
  });

  test('no cache keeps it, and a buffering proxy is asked to pass it through as it comes', async () => {
    const s = await serve();
    const stream = await listen(s.url);
    expect(stream.response.headers.get('cache-control')).toBe('no-store');
    expect(stream.response.headers.get('x-accel-buffering')).toBe('no');
    expect(stream.response.headers.get('etag')).toBeNull();
    stream.stop();
  });

  test('the current limits first, then one limits event per change within 500 ms, ids the log positions, int64 exact, CORS like the public routes', async () => {
    const s = await serve();
    const stream = await listen(s.url, { origin: 'https://bridge.example' });
    expect(stream.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.response.headers.get('access-control-allow-origin')).toBe('*');
    await waitFor(() => stream.got.length >= 1, 5_000);
    expect(stream.got[0]).toMatchObject({ event: 'limits', id: '0' });
    expect(stream.got[0]!.data).toContain('"pegCap":9223372036854775807');
    const sent = performance.now();
    await post(s, [{ type: 'blockConnected', height: 10 }]);
    await waitFor(() => stream.got.length >= 2, 5_000);
    expect(stream.got[1]!.at - sent).toBeLessThan(500);
    expect(stream.got[1]).toMatchObject({ event: 'limits', id: '1' });
    expect(stream.got[1]!.data).toBe(await (await fetch(`${s.url}/limits`)).text());
    // Throttle mode starting and ending are events of their own.
    await post(s, [{ type: 'throttleStarted', initiator: 'ops-1' }]);
    await post(s, [{ type: 'throttleEnded' }]);
    await waitFor(() => stream.got.length >= 6, 5_000);
    expect(stream.got.slice(2).map((e) => e.event)).toEqual([
      'throttleStarted',
      'limits',
      'throttleEnded',
      'limits',
    ]);
    expect(stream.got[2]!.data).toBe('{"initiator":"ops-1","position":2}');
    expect(stream.got[4]!.data).toBe('{"initiator":"ops-1","position":3}');
    stream.stop();
  });

  test("the check of the peg's backing is an event when its state changes: reserves unknown, tripped, cleared, and no event while it stays", async () => {
    const s = await serve();
    const stream = await listen(s.url);
    await waitFor(() => stream.got.length >= 1, 5_000);
    await post(s, [
      { type: 'blockConnected', height: 10 },
      { type: 'pegIntegritySet', maxUnbacked: 0, reservesMaxAge: 6 },
    ]);
    await post(s, [
      { type: 'peggedTotalObserved', total: 100 },
      { type: 'reservesObserved', total: 40, height: 10 },
    ]);
    // The reserves recover: the breaker stays tripped, so no pegIntegrity event; a clear
    // before them would trip it again within its batch.
    await post(s, [{ type: 'reservesObserved', total: 100, height: 10 }]);
    await post(s, [{ type: 'pegBreakerCleared' }]);
    await waitFor(() => stream.got.length >= 8, 5_000);
    const integrity = stream.got.filter((e) => e.event === 'pegIntegrity');
    expect(integrity.map((e) => JSON.parse(e.data).state)).toEqual([
      'reserves_unknown',
      'tripped',
      'backed',
    ]);
    expect(JSON.parse(integrity[1]!.data)).toMatchObject({
      tripped: { height: 10, peggedTotal: 100, reserves: 40, unbacked: 60 },
      position: 2,
    });
    stream.stop();
  });

  test('an idle stream gets a heartbeat comment every --heartbeat, and outlives the request and idle time-outs', async () => {
    const s = await serve({
      heartbeatMs: 100,
      headersTimeoutMs: 200,
      requestTimeoutMs: 200,
      keepAliveTimeoutMs: 200,
      checkIntervalMs: 50,
    });
    const stream = await listen(s.url);
    await waitFor(() => stream.comments.length >= 8, 5_000);
    expect(s.streams).toBe(1);
    await post(s, [{ type: 'blockConnected', height: 10 }]);
    await waitFor(() => stream.got.length >= 2, 5_000);
    expect(stream.got.map((e) => e.event)).toEqual(['limits', 'limits']);
    // Spaced by the interval, not sent in a burst (timers may run late, never early).
    const gaps = stream.comments.slice(1).map((t, i) => t - stream.comments[i]!);
    expect(Math.min(...gaps)).toBeGreaterThan(50);
    stream.stop();
  });

  test('changes that share one flush (group commit) are still one limits event each, ids consecutive', async () => {
    const s = await serve();
    const stream = await listen(s.url);
    await waitFor(() => stream.got.length >= 1, 5_000);
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => post(s, [{ type: 'blockConnected', height: i + 1 }])),
    );
    await waitFor(() => stream.got.length >= 21, 5_000);
    expect(stream.got.map((e) => e.id)).toEqual(Array.from({ length: 21 }, (_, i) => String(i)));
    stream.stop();
  });

  test('a subscriber that resumes with Last-Event-ID gets the current limits first, whatever the query parameters', async () => {
    const s = await serve();
    await post(s, [{ type: 'blockConnected', height: 10 }]);
    const stream = await listen(s.url, { 'last-event-id': '0' }, '/events?x=1&since=yesterday');
    await waitFor(() => stream.got.length >= 1, 5_000);
    expect(stream.got[0]).toMatchObject({ event: 'limits', id: '1' });
    stream.stop();
  });

  test('--max-streams caps the streams open at once: a new one is refused 503 too_many_streams until one closes', async () => {
    const s = await serve({ maxStreams: 2 });
    const a = await listen(s.url);
    const b = await listen(s.url);
    const refused = await fetch(`${s.url}/events`);
    expect(refused.status).toBe(503);
    expect(await refused.text()).toContain('too_many_streams');
    a.stop();
    await new Promise((r) => setTimeout(r, 200));
    const c = await listen(s.url);
    expect(c.response.status).toBe(200);
    b.stop();
    c.stop();
  });

  test('a subscriber that does not read is dropped alone once 1 MiB waits for it', async () => {
    const s = await serve();
    // Large events: 5,000 account entries, about 1 MiB a body.
    await largeEntries(s, 5_000);
    const stalled = await nonReader(s, 'GET /events HTTP/1.1\r\nHost: x\r\n\r\n');
    const reader = await listen(s.url);
    await waitFor(() => s.streams === 2, 5_000);
    for (let h = 1; h <= 60 && s.streams === 2; h++)
      await post(s, [{ type: 'blockConnected', height: h }]);
    // Dropped by the server (the paused client may not even have noticed yet).
    await waitFor(() => s.streams === 1, 10_000);
    // The one that reads got every change.
    await waitFor(() => reader.got.at(-1)?.id === String(s.position), 10_000);
    reader.stop();
    stalled.destroy();
  }, 60_000);

  test('a subscriber with a backlog is dropped only for its size, never as a stalled connection, which a client that pipelines and never reads is', async () => {
    const lines: string[] = [];
    const limits = {
      requestTimeoutMs: 200,
      headersTimeoutMs: 200,
      checkIntervalMs: 50,
      maxPipelined: 1_000,
    };
    const s = await serve(limits, (line) => lines.push(line));
    // What the rule for stalled connections says when it closes some.
    const stalledClosed = () =>
      lines.filter((l) => /^closed \d+ connection\(s\): answers unread/.test(l));
    // Events and answers of about 2 MiB (10,000 account entries).
    await largeEntries(s, 10_000);
    const sockets: Socket[] = [];
    // A stream that does not read: once the kernel's buffers are full, what each change adds
    // waits in the server, and the stream is dropped at the next change past 1 MiB. Each change
    // is followed by a pause longer than the request time-out and a check, so the backlog waits
    // that long at least once before the drop. (Bounded: 100 changes, 200 MiB in all.)
    sockets.push(await nonReader(s, 'GET /events HTTP/1.1\r\nHost: x\r\n\r\n'));
    await waitFor(() => s.streams === 1, 5_000);
    for (let h = 1; h <= 100 && s.streams === 1; h++) {
      await post(s, [{ type: 'blockConnected', height: h }]);
      await new Promise((r) => setTimeout(r, limits.requestTimeoutMs + 4 * limits.checkIntervalMs));
    }
    expect(s.streams, 'the stream was dropped for its backlog').toBe(0);
    expect(stalledClosed()).toEqual([]);
    // The rule is live: a client that pipelines 60 reads of a 2 MiB answer and reads none of
    // them is closed once its answers have waited the request time-out.
    sockets.push(await nonReader(s, 'GET /limits HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(60)));
    await waitFor(() => stalledClosed().length > 0, 30_000);
    expect(stalledClosed()).toEqual(['closed 1 connection(s): answers unread for 200 ms']);
    for (const socket of sockets) socket.destroy();
  }, 90_000);

  test('createLimitsClient().subscribe hears the current limits and every change, reconnects after a failure, and stops', async () => {
    const s = await serve();
    let failures = 1;
    const client = createLimitsClient({
      baseUrl: s.url,
      // The first attempt fails, as a network would.
      fetch: (input, init) =>
        failures-- > 0 ? Promise.reject(new Error('unreachable')) : fetch(input, init),
    });
    const seen: Array<[Limits, number]> = [];
    const errors: string[] = [];
    const stop = client.subscribe(
      (limits, position) => seen.push([limits, position]),
      (p) => errors.push(p.code),
    );
    await waitFor(() => seen.length >= 1, 5_000);
    expect(errors).toEqual(['network_error']);
    expect(seen[0]![0].pegCap).toBe(BIG);
    await post(s, [{ type: 'blockConnected', height: 10 }]);
    await waitFor(() => seen.length >= 2, 5_000);
    expect(seen[1]![1]).toBe(1);
    stop();
    await new Promise((r) => setTimeout(r, 100));
    await post(s, [{ type: 'blockConnected', height: 11 }]);
    await new Promise((r) => setTimeout(r, 300));
    expect(seen.length).toBe(2);
  });
});
