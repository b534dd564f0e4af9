/**
 * The connection gate's rule for answers that wait unread, on a real socket pair: the
 * client never reads, so the server's writes back up and stop making progress.
 */
import { once } from 'node:events';
import { connect, createServer, type Socket } from 'node:net';
import { expect, test } from 'vitest';
import { connectionGate } from '../../../src/server/node-http/connections.js';

test('closeStalled closes a connection only once its answers have waited the whole time without a byte taken', async () => {
  const gate = connectionGate(10);
  const accepted: Socket[] = [];
  const server = createServer((s) => {
    gate.admit(s);
    accepted.push(s);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  const reader = connect(port, '127.0.0.1');
  const stuck = connect(port, '127.0.0.1');
  stuck.pause();
  await Promise.all([once(stuck, 'connect'), once(reader, 'connect')]);
  while (accepted.length < 2) await new Promise((r) => setTimeout(r, 5));
  reader.on('data', () => undefined);
  const chunk = Buffer.alloc(1 << 20);
  // Write until each server side has a backlog: the paused client's never drains.
  const fill = async (s: Socket) => {
    while (s.write(chunk)) await new Promise((r) => setImmediate(r));
  };
  const [toReader, toStuck] = accepted as [Socket, Socket];
  await fill(toStuck);
  // Let the kernel take what it will, then nothing more moves.
  await new Promise((r) => setTimeout(r, 200));
  expect(toStuck.writableLength).toBeGreaterThan(0);
  const never = () => false;
  // First sight: nothing is closed, however long the time given.
  expect(gate.closeStalled(1000, 0, never)).toBe(0);
  // Short of the time: still open.
  expect(gate.closeStalled(1000, 999, never)).toBe(0);
  expect(toStuck.destroyed).toBe(false);
  // An exempt connection stays.
  expect(gate.closeStalled(1000, 1000, () => true)).toBe(0);
  expect(toStuck.destroyed).toBe(false);
  // Seen again from scratch after the exemption; then the whole time passes.
  expect(gate.closeStalled(1000, 2000, never)).toBe(0);
  expect(gate.closeStalled(1000, 3000, never)).toBe(1);
  expect(toStuck.destroyed).toBe(true);
  // A connection whose client reads is never closed, however long its answers take.
  toReader.write(Buffer.alloc(8 << 20));
  let now = 10_000;
  // Sweeps 100 ms apart, each counted as 0.6 s: two in a row without progress would close it.
  while (toReader.writableLength > 0) {
    expect(gate.closeStalled(1000, now, never)).toBe(0);
    now += 600;
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(toReader.destroyed).toBe(false);
  reader.destroy();
  stuck.destroy();
  server.close();
});

test('at the cap a new connection takes the place of an idle one, else of the oldest stream, else it is refused', async () => {
  const streams: Socket[] = [];
  const gate = connectionGate(
    3,
    () => true,
    () => streams.shift(),
  );
  const accepted: Socket[] = [];
  const server = createServer((s) => {
    accepted.push(s);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  const clients: Socket[] = [];
  const next = async () => {
    const c = connect(port, '127.0.0.1');
    clients.push(c);
    c.on('error', () => undefined);
    await once(c, 'connect');
    while (accepted.length < clients.length) await new Promise((r) => setTimeout(r, 5));
    return accepted[accepted.length - 1]!;
  };
  // Two streams (busy) and one idle connection fill the cap.
  const [s1, s2, idle] = [await next(), await next(), await next()];
  for (const s of [s1, s2, idle]) expect(gate.admit(s)).toBe(true);
  gate.busy(s1);
  gate.busy(s2);
  streams.push(s1, s2);
  // The idle one gives way first…
  expect(gate.admit(await next())).toBe(true);
  expect(idle.destroyed).toBe(true);
  expect(s1.destroyed).toBe(false);
  // …then the oldest stream (the one just admitted has started a request).
  gate.busy(accepted[3]!);
  expect(gate.admit(await next())).toBe(true);
  expect(streams).toEqual([s2]);
  expect(gate.evicted).toBe(2);
  // No stream left to give way, nothing idle: refused.
  streams.length = 0;
  gate.busy(accepted[4]!);
  expect(gate.admit(await next())).toBe(false);
  for (const c of clients) c.destroy();
  server.close();
});
