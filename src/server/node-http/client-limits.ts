/**
 * The limits the server puts on clients, so that slow and hostile ones cannot hold it: time
 * to send a request, connections and streams at once, bytes buffered, the budget of an
 * early answer's drain. Every one has a flag of `peg-limits serve`. Node-only.
 */
import type { LingerBudget } from './linger.js';

/** The limits the server puts on clients; every one has a flag of `peg-limits serve`. */
export interface ServerLimits {
  /** Time for a client to send a request's headers (slowloris); at most `requestTimeoutMs`. */
  readonly headersTimeoutMs: number;
  /** Time for a client to send a whole request, body included (trickled bodies). */
  readonly requestTimeoutMs: number;
  /** How long an idle keep-alive connection stays open after an answer. */
  readonly keepAliveTimeoutMs: number;
  /** How often the two time-outs above are checked. */
  readonly checkIntervalMs: number;
  /**
   * Connections open at once. At the cap a new connection evicts the connection idle the
   * longest (connected but silent, or kept alive after its answer); when none is idle, the
   * new one is closed at once.
   */
  readonly maxConnections: number;
  /** The largest request head (request line and headers), in bytes; larger gets 431. */
  readonly maxHeaderBytes: number;
  /** Requests a connection may have waiting for their answers (pipelining); more closes it. */
  readonly maxPipelined: number;
  /** Answer bytes waiting for a client that does not read them; more closes the connection. */
  readonly maxBufferedBytes: number;
  /** After an early answer, how long the client's unread bytes are drained at most. */
  readonly lingerMs: number;
  /** After an early answer, the longest wait for the client's next bytes while draining. */
  readonly lingerIdleMs: number;
  /** After an early answer, the most bytes drained; past them the connection is reset. */
  readonly lingerBytes: number;
  /** `GET /events` streams open at once; more get 503 `too_many_streams`. */
  readonly maxStreams: number;
  /** How often each `GET /events` stream gets a comment line, so proxies keep it open. */
  readonly heartbeatMs: number;
}

/** The defaults of {@link ServerLimits}. */
export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5_000,
  checkIntervalMs: 500,
  maxConnections: 1_000,
  maxHeaderBytes: 16 * 1024,
  maxPipelined: 16,
  maxBufferedBytes: 16 * 1024 * 1024,
  lingerMs: 5_000,
  lingerIdleMs: 2_000,
  lingerBytes: 16 * 1024 * 1024,
  maxStreams: 1_000,
  heartbeatMs: 15_000,
};

/**
 * The limits in force for `given` (unset fields take the defaults), and the drain budget
 * of an early answer: the headers are part of the request, so their time-out is at most
 * the request's; the drain waits for the client's next bytes no longer than it drains.
 */
export function limitsInForce(given: Partial<ServerLimits> | undefined): {
  readonly limits: ServerLimits;
  readonly linger: LingerBudget;
} {
  const all: ServerLimits = { ...DEFAULT_SERVER_LIMITS, ...given };
  const limits: ServerLimits = {
    ...all,
    headersTimeoutMs: Math.min(all.headersTimeoutMs, all.requestTimeoutMs),
  };
  return {
    limits,
    linger: {
      ms: limits.lingerMs,
      idleMs: Math.min(limits.lingerIdleMs, limits.lingerMs),
      bytes: limits.lingerBytes,
    },
  };
}
