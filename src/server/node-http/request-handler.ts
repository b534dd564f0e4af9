/**
 * How the node:http server takes each request: the per-connection bookkeeping (answers
 * waiting, idle or busy for the connection cap), admission before the body (an answer given
 * then lingers), `Peg-Limits-Min-Position`, and the dispatch to the service: a read at once
 * from the state reads see; a change, or a route the server serves itself (`Route.serve`:
 * the metrics, the audit trail, a feed's blocks), in its turn. An answer that is an event
 * stream's head (`GET /events`) opens a stream on the connection. Node-only.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { HandleOptions, HttpResponse, Service } from 'peg-limits';
import {
  admitRequest,
  bodyCollector,
  declaredTooLarge,
  isChange,
  type PathMatch,
  payloadTooLarge,
  problem,
  routeFor,
  routePatternOf,
} from '../../internal.js';
import type { ServerMetrics } from '../ops/index.js';
import type { ServerLimits } from './client-limits.js';
import type { ConnectionGate } from './connections.js';
import { MIN_POSITION_WAIT_MS, reached } from './min-position.js';
import { isEventStream } from './own-routes.js';
import type { RequestLog } from './request-log.js';
import type { Streams } from './streams.js';

/** What the request handler needs of the server. */
interface RequestHandlerParts {
  readonly limits: ServerLimits;
  readonly gate: ConnectionGate;
  readonly service: Service;
  readonly handleOptions: HandleOptions;
  readonly metrics: ServerMetrics | undefined;
  readonly streams: Streams;
  readonly requestLog: RequestLog;
  /** The log position of the state reads see. */
  readonly position: () => number;
  /** Why the event log takes no writes now, or undefined when it does. */
  readonly storeUnavailable: () => string | undefined;
  readonly send: (
    req: IncomingMessage,
    res: ServerResponse,
    response: HttpResponse,
    started: number,
    route: string,
  ) => void;
  readonly early: (
    req: IncomingMessage,
    response: HttpResponse,
    started: number,
    route: string,
  ) => void;
  readonly log: ((line: string) => void) | undefined;
}

// Answers a connection has not been sent yet, by connection.
const outstanding = new WeakMap<Socket, number>();

function hasBody(req: IncomingMessage): boolean {
  const length = Number(req.headers['content-length'] ?? 0);
  return req.headers['transfer-encoding'] !== undefined || length > 0;
}

/** One request as it goes through: its head, its route, how it is answered. */
interface Taken {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** What the service is handed: made once, its match set once admitted. */
  readonly request: {
    method: string;
    path: string;
    headers: IncomingHttpHeaders;
    match?: PathMatch | undefined;
  };
  readonly started: number;
  route: string;
  /** The largest body its route takes (0: none), set once admitted. */
  maxBody: number;
  /** Whether its body may still come: an answer then goes straight to the socket (lingering). */
  unread: boolean;
}

/** Takes the requests of one server. */
export class RequestHandler {
  readonly #parts: RequestHandlerParts;
  // A response's `close` listener (one function for every response, no closure each).
  readonly #answered: (this: ServerResponse) => void;

  constructor(parts: RequestHandlerParts) {
    this.#parts = parts;
    const gate = parts.gate;
    this.#answered = function (this: ServerResponse) {
      const socket = this.req.socket;
      const left = (outstanding.get(socket) ?? 1) - 1;
      outstanding.set(socket, left);
      if (left === 0) gate.idle(socket);
    };
  }

  /** node:http's `request` (and `checkContinue`) listener. */
  readonly onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const { requestLog, limits, handleOptions, metrics } = this.#parts;
    // Timed only when someone reads the request lines.
    const started = requestLog.timed ? performance.now() : 0;
    if (!this.#track(req, res, limits)) return;
    const request = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: req.headers,
      match: undefined as PathMatch | undefined,
    };
    const taken: Taken = {
      req,
      res,
      request,
      started,
      route: 'none',
      maxBody: 0,
      // Any answer given before the body is read must linger.
      unread: hasBody(req),
    };
    const admitted = admitRequest(request, handleOptions);
    if (!admitted.ok) {
      if (metrics !== undefined) taken.route = routePatternOf(request, handleOptions) ?? 'none';
      this.#answer(taken, admitted.response);
      return;
    }
    request.match = admitted.match;
    taken.maxBody = admitted.maxBody;
    // The metrics' route label: the pattern, never the raw path.
    taken.route = admitted.match?.pattern ?? 'none';
    if (this.#waitForPosition(taken)) return;
    this.#dispatch(taken);
  };

  // Answers the request: straight to the socket (lingering) while its body may still come.
  #answer(taken: Taken, response: HttpResponse): void {
    if (taken.unread) this.#parts.early(taken.req, response, taken.started, taken.route);
    else this.#parts.send(taken.req, taken.res, response, taken.started, taken.route);
  }

  // Counts the connection's answers waiting; false (the connection closed) for a client that
  // sends request after request without reading the answers.
  #track(req: IncomingMessage, res: ServerResponse, limits: ServerLimits): boolean {
    const socket = req.socket;
    const waiting = (outstanding.get(socket) ?? 0) + 1;
    if (waiting > limits.maxPipelined || socket.writableLength > limits.maxBufferedBytes) {
      this.#parts.log?.(`${req.method} ${req.url} closed: ${waiting - 1} answers unread`);
      socket.destroy();
      return false;
    }
    outstanding.set(socket, waiting);
    this.#parts.gate.busy(socket);
    // A response is closed once: sent whole, or its connection gone.
    res.on('close', this.#answered);
    return true;
  }

  // Read your writes (docs/replicas.md): a read that names a log position is answered once
  // this replica shows it, or after MIN_POSITION_WAIT_MS with 503 catching_up. A change
  // needs no wait: it is computed on the newest state of the log. True when it took over.
  #waitForPosition(taken: Taken): boolean {
    const wanted = taken.req.headers['peg-limits-min-position'];
    if (wanted === undefined || taken.request.match === undefined) return false;
    const n = /^[0-9]{1,30}$/.test(String(wanted)) ? Number(wanted) : undefined;
    if (n === undefined) {
      this.#answer(
        taken,
        problem(
          400,
          'bad_request',
          `Peg-Limits-Min-Position must be a non-negative integer (a log position), got ${JSON.stringify(String(wanted).slice(0, 40))}`,
        ),
      );
      return true;
    }
    const { position, service } = this.#parts;
    if (n <= position() || isChange(taken.request.method)) return false;
    reached(service, position, n).then((ok) => {
      if (ok) this.#dispatch(taken);
      else
        this.#answer(
          taken,
          problem(
            503,
            'catching_up',
            `this replica has not reached position ${n} within ${MIN_POSITION_WAIT_MS / 1000} s (it is at ${position()}); try again`,
            { headers: { 'retry-after': '1' } },
          ),
        );
    });
    return true;
  }

  #dispatch(taken: Taken): void {
    const { request, maxBody } = taken;
    const match = request.match;
    const route = match === undefined ? undefined : routeFor(match, request.method);
    if (maxBody === 0) {
      // A read is answered at once from the state reads see; only a change waits its turn,
      // and a route the server serves itself (the metrics, the audit trail, the held blocks,
      // the stream) takes its time.
      if (isChange(request.method) || route?.serve !== undefined) this.#handle(taken, undefined);
      else this.#answer(taken, this.#parts.service.read(request));
      return;
    }
    this.#readBody(taken);
  }

  // GET /events: the stream's head carries the CORS headers a public route gets.
  #stream(taken: Taken, head: HttpResponse): void {
    const { streams, position, requestLog } = this.#parts;
    const cors: Record<string, string> = {};
    for (const [name, value] of Object.entries(head.headers))
      if (name.startsWith('access-control-') || name === 'vary') cors[name] = value;
    const refused = streams.open(taken.req, taken.res, {
      ...cors,
      'peg-limits-position': String(position()),
    });
    if (refused !== undefined) this.#answer(taken, refused);
    else requestLog.logged(taken.req, 200, taken.started, taken.route);
  }

  // The service's answer, in its turn.
  #handle(taken: Taken, body: Uint8Array | undefined): void {
    this.#parts.service
      .handle({ ...taken.request, body, remote: taken.req.socket.remoteAddress })
      .then(
        (r) => (isEventStream(r) ? this.#stream(taken, r) : this.#answer(taken, r)),
        (e: unknown) => this.#answer(taken, problem(500, 'internal_error', (e as Error).message)),
      );
  }

  // A request with a body: refused before it when the log takes no writes or it says it is
  // too large; read no further than the route takes (past it, 413 at once).
  #readBody(taken: Taken): void {
    const { req, res, maxBody: max } = taken;
    const unavailable = this.#parts.storeUnavailable();
    if (unavailable !== undefined) {
      this.#answer(
        taken,
        problem(
          503,
          'store_unavailable',
          `the event log takes no writes (${unavailable}); try again shortly`,
          { headers: { 'retry-after': '1' } },
        ),
      );
      return;
    }
    if (declaredTooLarge(req.headers, max)) {
      this.#answer(taken, payloadTooLarge(max));
      return;
    }
    // Admitted: a client that asked (Expect: 100-continue) may now send its body.
    if (/^100-continue$/i.test(String(req.headers.expect ?? ''))) res.writeContinue();
    const body = bodyCollector(max);
    const onData = (chunk: Buffer) => {
      if (body.add(chunk)) return;
      req.off('data', onData);
      req.off('end', onEnd);
      this.#parts.early(req, payloadTooLarge(max), taken.started, taken.route);
    };
    const onEnd = () => {
      // Read whole: the answer goes the usual way.
      taken.unread = false;
      this.#handle(taken, body.bytes());
    };
    req.on('data', onData);
    req.once('end', onEnd);
  }
}
