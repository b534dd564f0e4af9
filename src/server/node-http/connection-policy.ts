/**
 * The connection policy: which connections the server keeps, so that idle, slow and
 * hostile clients cannot hold it. At the cap a new connection evicts the idle one
 * (`connections.ts`); a connection that sent nothing closes after a request's time; one
 * whose answers wait unread is closed; a malformed, too large or too slow request head gets
 * its answer, drained before the close. Node-only.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { problem } from '../../internal.js';
import type { ServerLimits } from './client-limits.js';
import type { ConnectionGate } from './connections.js';
import { answerAndLinger, isLingering, type LingerBudget, rawAnswer } from './linger.js';

/** What the policy needs. */
interface ConnectionPolicy {
  readonly gate: ConnectionGate;
  readonly limits: ServerLimits;
  readonly linger: LingerBudget;
  /** Connections with rules of their own (a stream, a drain), left to them. */
  readonly exempt: (socket: Socket) => boolean;
  readonly logLine: ((line: string) => void) | undefined;
}

/** Puts the policy on `server`; returns a function that stops its timer. */
export function guardConnections(server: Server, policy: ConnectionPolicy): () => void {
  const { gate, limits, linger, exempt } = policy;
  const log = policy.logLine;
  server.on('connection', (socket: Socket) => {
    if (!gate.admit(socket)) socket.destroy();
  });
  // A connection that has sent nothing at all is held by no request time-out: close a
  // connection idle for as long as a whole request may take. One with a request under way
  // is left to the header and request time-outs, which answer 408.
  server.setTimeout(limits.requestTimeoutMs, (socket: Socket) => {
    if (gate.isIdle(socket)) socket.destroy();
  });
  // A client that pipelines requests and never reads the answers: once its answers back up,
  // the server stops reading it, so no request time-out applies. Close it when its answers
  // have waited the request time-out without a byte taken. A stream has its own rule (a
  // subscriber 1 MiB behind is dropped); a lingering connection its own budget.
  const stalled = setInterval(() => {
    const closed = gate.closeStalled(limits.requestTimeoutMs, performance.now(), exempt);
    if (closed > 0)
      log?.(`closed ${closed} connection(s): answers unread for ${limits.requestTimeoutMs} ms`);
  }, limits.checkIntervalMs);
  stalled.unref();
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    // A connection answered early already is being drained: its own budget closes it.
    if (isLingering(socket)) return;
    if (!socket.writable || error.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    const response =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? problem(
            431,
            'header_too_large',
            `the request line and headers must be at most ${limits.maxHeaderBytes} bytes`,
          )
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? problem(
              408,
              'request_timeout',
              `the request was not received whole in time (headers within ${limits.headersTimeoutMs} ms, the whole request within ${limits.requestTimeoutMs} ms)`,
            )
          : problem(
              400,
              'bad_request',
              `the request is not valid HTTP/1.1 (${error.code ?? error.message})`,
            );
    answerAndLinger(socket, rawAnswer(response.status, response.headers, response.body), linger);
  });
  return () => clearInterval(stalled);
}
