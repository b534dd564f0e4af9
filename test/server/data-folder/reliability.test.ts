/**
 * The server under faults and hostile clients, with real processes on loopback: a disk
 * that fills up, a flush that fails, SIGKILL at random moments (during streams of operator
 * events and during compactions), slow and endless clients, and a restart after a long
 * history.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import {
  applyAll,
  createLimitsState,
  decodeJson,
  encodeJson,
  type LimitsEvent,
  type LimitsState,
} from '../../../src/index.js';
import { openDataLog } from '../../../src/server/data-folder/data-log.js';
import { writeInTurns } from '../../support/clients.js';
import { readDataSnapshot } from '../../support/data-snapshot.js';
import { CLI, killGroup, type Proc, spawnServer, tempDir, waitFor } from '../../support/proc.js';
import { TOKEN } from '../../support/tokens.js';

const ENV = { PEG_LIMITS_ADMIN_TOKEN: TOKEN };
// The embedded configuration's window cap: 100 BTC.
const CAP = 10_000_000_000n;

const procs: Proc[] = [];
afterEach(() => {
  for (const p of procs.splice(0)) killGroup(p);
});

async function serve(args: string[], command = ['node', CLI]): Promise<Proc> {
  const p = await spawnServer(command[0]!, [...command.slice(1), 'serve', ...args], ENV);
  procs.push(p);
  return p;
}

async function post(url: string, events: unknown): Promise<{ status: number; body: string }> {
  const r = await fetch(`${url}/admin/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: encodeJson(events),
  });
  return { status: r.status, body: await r.text() };
}

async function available(url: string): Promise<bigint> {
  const r = await fetch(`${url}/limits`);
  return (decodeJson(await r.text()) as { availableToWithdraw: bigint }).availableToWithdraw;
}

function withdrawal(id: string, amount: bigint): LimitsEvent {
  return { type: 'withdrawalRequested', id, account: `a${id.length % 7}`, amount, height: 100 };
}

/** The withdrawal ids a data folder holds: the snapshot's and those of the journal lines after it. */
function idsOnDisk(dir: string): Set<string> {
  const ids = new Set<string>();
  let seq = 0;
  if (existsSync(join(dir, 'snapshot.json'))) {
    const snap = readDataSnapshot(dir);
    seq = Number(snap.seq);
    for (const w of snap.withdrawals) ids.add(w.id);
  }
  const lines = readFileSync(join(dir, 'journal.jsonl'), 'utf8').split('\n');
  const header = decodeJson(lines[0]!) as { after: bigint };
  let at = Number(header.after);
  for (const line of lines.slice(1)) {
    // A torn last line is no batch.
    let batch: Array<{ type: string; id?: string }>;
    try {
      // A line is the batch's audit record (or, as written before the trail, its events).
      const value = decodeJson(line) as typeof batch | { events: typeof batch };
      batch = Array.isArray(value) ? value : value.events;
    } catch {
      continue;
    }
    if (++at <= seq) continue;
    for (const e of batch) if (e.type === 'withdrawalRequested') ids.add(e.id!);
  }
  return ids;
}

describe('a disk that fills up', () => {
  test('nothing answered 200 is lost, nothing answered 500 reappears, and the server starts again', async () => {
    const dir = tempDir();
    // 24 KiB per file: the journal fills up after a dozen batches of 2 KiB.
    const p = await serve(
      ['--port', '0', '--data', dir, '--quiet'],
      ['bash', '-c', `ulimit -f 24; exec node ${CLI} "$@"`, 'peg-limits'],
    );
    expect((await post(p.url, { type: 'blockConnected', height: 100 })).status).toBe(200);
    const acked: string[] = [];
    const refused: string[] = [];
    for (let b = 0; b < 40; b++) {
      const batch = Array.from({ length: 20 }, (_, i) => withdrawal(`b${b}-${i}`, 1000n));
      const r = await post(p.url, batch);
      if (r.status === 200) acked.push(...batch.map((e) => (e as { id: string }).id));
      else {
        expect(r.status).toBe(500);
        expect(r.body).toMatch(/could not be persisted: writing .*journal\.jsonl failed/);
        refused.push(...batch.map((e) => (e as { id: string }).id));
      }
    }
    expect(acked.length).toBeGreaterThan(100);
    expect(refused.length).toBeGreaterThan(100);
    // The server is still up, answering from what it acknowledged.
    expect(await available(p.url)).toBe(CAP - 1000n * BigInt(acked.length));
    killGroup(p, 'SIGKILL');
    await p.exited;

    // The same disk, space freed: every acknowledged batch, none of the refused ones.
    const q = await serve(['--port', '0', '--data', dir, '--quiet']);
    expect(q.stderr).not.toMatch(/dropped/);
    expect(await available(q.url)).toBe(CAP - 1000n * BigInt(acked.length));
    const onDisk = idsOnDisk(dir);
    expect(acked.every((id) => onDisk.has(id))).toBe(true);
    expect(refused.some((id) => onDisk.has(id))).toBe(false);
    // New lines go on cleanly after the last good one, and a restart reads them.
    expect((await post(q.url, [withdrawal('after', 7n)])).status).toBe(200);
    killGroup(q, 'SIGKILL');
    await q.exited;
    const r = await serve(['--port', '0', '--data', dir, '--quiet']);
    expect(await available(r.url)).toBe(CAP - 1000n * BigInt(acked.length) - 7n);
  });
});

describe('a flush that fails', () => {
  test('stops the process with exit code 3, answering nothing 200 that it could not flush', async () => {
    const dir = tempDir();
    const p = await spawnServer(
      'node',
      ['test/support/failing-flush.mjs', 'serve', '--port', '0', '--data', dir],
      { ...ENV, FAIL_FLUSH_AFTER: '3' },
    );
    procs.push(p);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      try {
        statuses.push((await post(p.url, { type: 'blockConnected', height: 100 + i })).status);
      } catch {
        statuses.push(0); // the process is gone
      }
    }
    expect(await p.exited).toBe(3);
    expect(p.stderr).toMatch(/flushing .*journal\.jsonl failed: input\/output error; stopping/);
    // Three batches were flushed; the fourth's flush failed, and nothing after it was answered.
    expect(statuses.slice(0, 3)).toEqual([200, 200, 200]);
    expect(statuses.slice(3).every((s) => s !== 200)).toBe(true);
    // A restart reads what is there: at least everything acknowledged (height 102 is known).
    const q = await serve(['--port', '0', '--data', dir, '--quiet']);
    expect((await post(q.url, { type: 'blockConnected', height: 102 })).status).toBe(409);
  });
});

describe('SIGKILL at random moments', () => {
  test('during streams of operator events and compactions, many rounds: every acknowledged event survives, and the limits equal a replay of what is on disk', async () => {
    const dir = tempDir();
    const sent = new Map<string, bigint>();
    const acked = new Set<string>();
    let midCompaction = 0;
    for (let round = 0; round < 12; round++) {
      // Small snapshot interval: compactions run all the time, so kills land in them too.
      const p = await serve(['--port', '0', '--data', dir, '--snapshot-every', '200']);
      if (round === 0) {
        expect((await post(p.url, { type: 'blockConnected', height: 100 })).status).toBe(200);
        // A large history makes each compaction take a while.
        const big = Array.from({ length: 4000 }, (_, i) => withdrawal(`seed${i}`, 3n));
        for (const e of big) sent.set((e as { id: string }).id, 3n);
        expect((await post(p.url, big)).status).toBe(200);
        for (const e of big) acked.add((e as { id: string }).id);
      }
      // Everything acknowledged so far is there after the restart.
      const expected = [...idsOnDisk(dir)].reduce((sum, id) => sum + sent.get(id)!, 0n);
      expect(await available(p.url)).toBe(CAP - expected);

      let stop = false;
      let n = 0;
      const writer = async (w: number) => {
        while (!stop) {
          const id = `r${round}-${w}-${n++}`;
          const amount = BigInt(1 + (n % 997));
          sent.set(id, amount);
          try {
            const r = await post(p.url, [withdrawal(id, amount)]);
            if (r.status === 200) acked.add(id);
          } catch {
            return;
          }
        }
      };
      const writers = Promise.all([0, 1, 2, 3].map(writer));
      if (round % 2 === 0) {
        // A random moment of the stream.
        await new Promise((r) => setTimeout(r, 150 + Math.random() * 600));
      } else {
        // The moment a compaction starts (or, failing that, after 2 s).
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 2_000);
          p.child.stderr!.on('data', (chunk: Buffer) => {
            if (/compacting:/.test(chunk.toString())) {
              killGroup(p, 'SIGKILL');
              clearTimeout(timer);
              resolve();
            }
          });
        });
      }
      killGroup(p, 'SIGKILL');
      stop = true;
      await writers;
      expect(await p.exited).toBe('SIGKILL');
      const started = (p.stderr.match(/compacting:/g) ?? []).length;
      const finished = (p.stderr.match(/compacted:/g) ?? []).length;
      if (started > finished) midCompaction++;
      const onDisk = idsOnDisk(dir);
      const lost = [...acked].filter((id) => !onDisk.has(id));
      expect(lost, `round ${round}`).toEqual([]);
      expect([...onDisk].every((id) => sent.has(id))).toBe(true);
    }
    expect(midCompaction).toBeGreaterThanOrEqual(4);
    // The last word: limits computed in the test from the events on disk.
    const p = await serve(['--port', '0', '--data', dir, '--quiet']);
    let state: LimitsState = createLimitsState({
      limits: { rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: CAP },
    });
    const events: LimitsEvent[] = [{ type: 'blockConnected', height: 100 }];
    for (const id of idsOnDisk(dir)) events.push(withdrawal(id, sent.get(id)!));
    const r = applyAll(state, events);
    if (!r.ok) throw r.error;
    state = r.state;
    const { getLimits } = await import('../../../src/index.js');
    expect(await available(p.url)).toBe(getLimits(state).availableToWithdraw);
  });
});

/**
 * Opens a raw connection, runs `act` on it, and resolves with what came back, when the first
 * of it came (`answeredMs`), and when the connection closed (`ms`).
 */
function raw(
  url: string,
  act: (socket: Socket) => void,
): Promise<{ ms: number; answeredMs: number; received: string; written: number }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const started = performance.now();
    let received = '';
    let answeredMs = Number.POSITIVE_INFINITY;
    let written = 0;
    const socket = connect(Number(port), hostname, () => act(socket));
    const write = socket.write.bind(socket);
    socket.write = ((chunk: string | Buffer, ...rest: never[]) => {
      written += chunk.length;
      return write(chunk, ...rest);
    }) as typeof socket.write;
    socket.on('data', (c) => {
      if (received === '') answeredMs = performance.now() - started;
      received += c.toString('latin1');
    });
    socket.on('error', () => undefined);
    socket.on('close', () =>
      resolve({ ms: performance.now() - started, answeredMs, received, written }),
    );
  });
}

function every(socket: Socket, ms: number, fn: () => void): void {
  const timer = setInterval(() => (socket.destroyed ? clearInterval(timer) : fn()), ms);
  socket.on('close', () => clearInterval(timer));
}

describe('slow and hostile clients', () => {
  test('each is closed or refused within its bound while GET /limits stays fast for others', async () => {
    const dir = tempDir();
    const p = await serve([
      '--port',
      '0',
      '--data',
      dir,
      '--quiet',
      '--header-timeout',
      '1',
      '--request-timeout',
      '2',
      '--keep-alive-timeout',
      '1',
    ]);
    // Another client reads the limits all along; what it got is checked at the end.
    const latencies: number[] = [];
    const statuses: (number | string)[] = [];
    let reading = true;
    const reader = (async () => {
      while (reading) {
        const t = performance.now();
        statuses.push(
          await fetch(`${p.url}/limits`).then(
            (r) => r.status,
            (e: Error) => e.message,
          ),
        );
        latencies.push(performance.now() - t);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();

    const attacks = await Promise.all([
      // Slowloris: a header line every 300 ms, never finishing.
      raw(p.url, (s) => {
        s.write('GET /limits HTTP/1.1\r\nHost: x\r\n');
        every(s, 300, () => s.write('X-Slow: 1\r\n'));
      }),
      // An idle connection: never sends a byte.
      raw(p.url, () => undefined),
      // A trickled body: one byte every 200 ms of a 1000-byte body.
      raw(p.url, (s) => {
        s.write(
          'POST /start_throttle HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n',
        );
        every(s, 200, () => s.write('{'));
      }),
      // An endless chunked body to the operator route, with the right token.
      raw(p.url, (s) => {
        s.write(
          `POST /admin/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\n`,
        );
        // As fast as TCP takes it (reading all along): what the kernel accepted bounds what
        // the server absorbed.
        const chunk = `10000\r\n${'['.repeat(0x10000)}\r\n`;
        writeInTurns(s, () => chunk);
      }),
      // An oversized header.
      raw(p.url, (s) =>
        s.write(`GET /limits HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40_000)}\r\n\r\n`),
      ),
      // A large body before authentication: refused before it is read.
      raw(p.url, (s) => {
        s.write(
          'POST /admin/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n',
        );
        const chunk = '['.repeat(0x10000);
        writeInTurns(s, () => chunk);
      }),
      // A pipelining client that never reads its answers, sending as fast as TCP takes it
      // (so it sees the close on a write, whatever the kernel's socket buffers hold).
      raw(p.url, (s) => {
        s.pause();
        const requests = 'GET /limits HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(100);
        const pump = () => {
          while (!s.destroyed && s.write(requests));
        };
        s.on('drain', pump);
        pump();
      }),
    ]).finally(() => {
      reading = false;
    });
    await reader;
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    const [slowloris, idle, trickle, endless, header, unauth, pipelined] = attacks;
    // Headers within 1 s (checked every 0.5 s); whole requests within 2 s. Measured on a
    // 2-core machine: slowloris and idle 1.47 s, trickle 2.47 s, endless 0.04–0.15 s, header
    // and pipelined 0.04–0.05 s. Bounds: the time-out, its check interval, and 1 s or more.
    expect(slowloris!.ms).toBeLessThan(3_000);
    expect(slowloris!.received).toMatch(/^HTTP\/1\.1 408/);
    expect(idle!.ms).toBeLessThan(4_000);
    expect(trickle!.ms).toBeLessThan(4_000);
    expect(endless!.received).toMatch(/^HTTP\/1\.1 413/);
    // The 1 MiB the route takes, then at most 16 MiB drained after the answer: it is reset
    // once that is read (tens of ms here), whatever the kernel's socket buffers hold.
    expect(endless!.ms).toBeLessThan(3_000);
    expect(header!.received).toMatch(/^HTTP\/1\.1 431/);
    expect(header!.ms).toBeLessThan(1_000);
    expect(unauth!.received).toMatch(/^HTTP\/1\.1 401/);
    // Not a byte of the body is taken before the 401, at most 16 MiB are drained after it:
    // far less than the 1 GB declared went through, whatever the socket buffers hold.
    expect(unauth!.written).toBeLessThan(256 * 1024 * 1024);
    // Answered at once (measured: a few ms); closed within the drain's budget (5 s at the
    // most, 2 s once the client goes quiet), with 1 s of slack.
    expect(unauth!.answeredMs).toBeLessThan(1_000);
    expect(unauth!.ms).toBeLessThan(6_000);
    // Closed once more than 16 answers wait (measured: 10–20 ms), or once its answers have
    // waited unread for the request time-out: 2 s, its 0.5 s check, and 1.5 s of slack.
    expect(pipelined!.ms).toBeLessThan(4_000);
    // The other client never waited long.
    latencies.sort((a, b) => a - b);
    expect(latencies.length).toBeGreaterThan(20);
    // Measured on a 2-core machine: p95 5–15 ms, the slowest read 180–210 ms (the test's own
    // attackers share its event loop while they pump). Bounds: about 10× and 5× that.
    expect(latencies[Math.floor(latencies.length * 0.95)]!).toBeLessThan(100);
    expect(latencies.at(-1)!).toBeLessThan(1_000);
  });
});

describe('a client that pipelines and never reads', () => {
  test('cannot hold its connection once its answers wait unread for the request time-out', async () => {
    // Few requests at a time, so the cap on unanswered requests is not what closes it: the
    // answers fill the socket buffers, the server stops reading the connection, and nothing
    // but unread answers is left. Measured on main before the fix: held as long as the
    // client liked (15 s and counting); after it, closed 4.5 s in (2.3 s to fill the
    // buffers, then the 2 s time-out and its 0.5 s check).
    const dir = tempDir();
    const p = await serve(['--port', '0', '--data', dir, '--quiet', '--request-timeout', '2']);
    const pipelined = await raw(p.url, (s) => {
      s.pause();
      // Big answers, four at a time every 10 ms: about 7 MB/s to fill the buffers with. The
      // client keeps writing, so it sees the close on a write.
      every(s, 10, () => s.write('GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(4)));
      // Past the bound it is the test that closes it.
      setTimeout(() => s.destroy(), 15_000).unref();
    });
    // Filling the buffers takes 1–3 s at most on Linux's default limits (4 MiB sent, 6 MiB
    // received); then the 2 s time-out, its 0.5 s check, and slack.
    expect(pipelined.ms).toBeLessThan(10_000);
    // The server still answers everyone else.
    expect((await fetch(`${p.url}/limits`)).status).toBe(200);
  }, 30_000);
});

describe('a long history', () => {
  test('after 1M streamed withdrawals the data folder stays bounded and start-up replays only the journal after the snapshot', async () => {
    const dir = tempDir();
    let state = createLimitsState({
      limits: { rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: CAP },
    });
    const store = await openDataLog({ dir, initial: state });
    let n = 0;
    let height = 800_000;
    let batches = 0;
    let last: Promise<void> = Promise.resolve();
    while (n < 1_000_000) {
      // 100 blocks of 16 withdrawals per batch.
      const events: LimitsEvent[] = [];
      for (let b = 0; b < 100; b++) {
        events.push({ type: 'blockConnected', height: ++height });
        for (let i = 0; i < 16; i++, n++)
          events.push({
            type: 'withdrawalRequested',
            id: `w${n}`,
            account: `a${n % 5000}`,
            amount: 1n,
            height,
          });
      }
      const r = applyAll(state, events);
      if (!r.ok) throw r.error;
      last = (await store.append(events, r.state, state)).durable;
      state = r.state;
      batches++;
    }
    await last;
    // Killed, not closed: no final snapshot; the journal holds what came after the last one
    // (once the compaction under way, if any, is done: it runs beside the appends).
    await store.compactions();
    const files = readdirSync(dir);
    const bytes = files.reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
    expect(bytes).toBeLessThan(40 * 1024 * 1024);

    const started = performance.now();
    const p = await serve(['--port', '0', '--data', dir]);
    const ms = performance.now() - started;
    await waitFor(() => /opened .*: \d+ batches, \d+ replayed/.test(p.stderr));
    const m = /opened .*: (\d+) batches, (\d+) replayed from the journal, in (\d+) ms/.exec(
      p.stderr,
    )!;
    expect(Number(m[1])).toBe(batches);
    // The journal after the last compaction's snapshot: what was appended while it ran
    // (the appends do not wait for their writes, so on a busy machine a compaction falls
    // further behind them: 29 of 625 quiet, 134 beside two CPU hogs).
    expect(Number(m[2])).toBeLessThan(batches / 3);
    expect(await available(p.url)).toBe(CAP - 144n * 16n);
    console.log(
      `restart after 1M streamed withdrawals: data folder ${(bytes / 1024 / 1024).toFixed(1)} MiB, ${m[2]} of ${batches} batches replayed, store opened in ${m[3]} ms, listening after ${ms.toFixed(0)} ms`,
    );
  });
});
