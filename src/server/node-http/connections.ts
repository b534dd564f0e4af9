/**
 * The connection cap, kept so that idle connections cannot lock honest clients out.
 * Node-only.
 *
 * At the cap, a new connection first evicts the connection that has waited longest without
 * starting a request: one that has sent nothing since it connected, or a kept-alive one idle
 * since its last answer (nginx reuses such "reusable" connections the same way). A connection
 * that has started a request (a slowloris one too) is never evicted: the header and request
 * time-outs bound it. When none is idle, the oldest `GET /events` stream gives way (its
 * subscriber reconnects), so that a crowd of streams cannot lock out the brake
 * (`POST /start_throttle`) or an operator. Only when there is neither is the new one refused.
 */
import type { Socket } from 'node:net';

/** Counts the open connections and picks which one to evict at the cap. */
export interface ConnectionGate {
  /** Takes a new connection: true when it may stay (after evicting an idle one if need be). */
  admit(socket: Socket): boolean;
  /** A request has started on the connection: it is no longer idle. */
  busy(socket: Socket): void;
  /** Every request of the connection is answered: it is idle from now on. */
  idle(socket: Socket): void;
  /** Whether the connection is idle: no request under way, none begun since. */
  isIdle(socket: Socket): boolean;
  /**
   * Closes each connection whose answers have waited for `ms` or longer without the client
   * taking a byte of them (it pipelines and never reads: the server has stopped reading it,
   * so no time-out of a request applies). `skip` exempts a connection. Returns how many.
   */
  closeStalled(ms: number, now: number, skip: (socket: Socket) => boolean): number;
  /** Connections open now. */
  readonly open: number;
  /** Connections evicted so far. */
  readonly evicted: number;
}

/**
 * A gate for at most `max` open connections. `canEvict` may veto evicting a connection
 * (one that is being closed already, for instance); `evictStream` ends the oldest stream
 * when no connection is idle, and gives its connection (or `undefined`: there is none).
 */
export function connectionGate(
  max: number,
  canEvict: (socket: Socket) => boolean = () => true,
  evictStream: () => Socket | undefined = () => undefined,
): ConnectionGate {
  const open = new Set<Socket>();
  // Idle connections, longest idle first (a Map keeps insertion order), each with the bytes
  // it had read when it turned idle: more read since means a request has begun arriving.
  const idle = new Map<Socket, number>();
  let evicted = 0;
  // Connections with answers waiting: the bytes the client had taken, and since when.
  const waiting = new Map<Socket, { taken: number; since: number }>();

  function evictOne(): boolean {
    for (const [socket, bytesRead] of idle) {
      idle.delete(socket);
      if (socket.destroyed || socket.bytesRead !== bytesRead || !canEvict(socket)) continue;
      evicted++;
      open.delete(socket);
      socket.destroy();
      return true;
    }
    const stream = evictStream();
    if (stream === undefined) return false;
    evicted++;
    open.delete(stream);
    waiting.delete(stream);
    return true;
  }

  return {
    admit(socket) {
      if (open.size >= max && !evictOne()) return false;
      open.add(socket);
      idle.set(socket, socket.bytesRead);
      socket.once('close', () => {
        open.delete(socket);
        idle.delete(socket);
        waiting.delete(socket);
      });
      return true;
    },
    busy(socket) {
      idle.delete(socket);
    },
    idle(socket) {
      if (!open.has(socket) || socket.destroyed) return;
      // Moved to the end: idle the shortest.
      idle.delete(socket);
      idle.set(socket, socket.bytesRead);
    },
    isIdle(socket) {
      return idle.get(socket) === socket.bytesRead;
    },
    closeStalled(ms, now, skip) {
      let closed = 0;
      for (const socket of open) {
        if (socket.writableLength === 0 || socket.destroyed || skip(socket)) {
          waiting.delete(socket);
          continue;
        }
        // What the socket has written whole: what it took, less what still waits.
        const taken = socket.bytesWritten - socket.writableLength;
        const seen = waiting.get(socket);
        if (seen === undefined || seen.taken !== taken) {
          waiting.set(socket, { taken, since: now });
        } else if (now - seen.since >= ms) {
          waiting.delete(socket);
          socket.destroy();
          closed++;
        }
      }
      return closed;
    },
    get open() {
      return open.size;
    },
    get evicted() {
      return evicted;
    },
  };
}
