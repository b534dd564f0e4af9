/**
 * `GET /events` (docs/operating.md, "Operating it"): a Server-Sent Events stream of changes. On connecting, and after
 * every change reads see, one `limits` event whose data is the `GET /limits` body (int64
 * exact) and whose `id` is the log position; `throttleStarted` and `throttleEnded` events
 * (data `{ initiator, position }`) when throttle mode starts or ends; `pegIntegrity` (data
 * `GET /integrity`'s body and the position) when the check of the peg's backing changes its
 * state (tripped, cleared, reserves unknown or known again); a comment line every
 * `heartbeatMs` (15 s by default). At most `maxStreams` at once (then 503); a subscriber that does not read is dropped
 * once 1 MiB waits for it. Node-only.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import {
  encodeJson,
  getLimits,
  type HttpResponse,
  type LimitsState,
  pegIntegrity,
} from 'peg-limits';
import { problem } from '../../internal.js';

/** Bytes that may wait for a subscriber before it is dropped. */
const MAX_STREAM_BACKLOG = 1024 * 1024;

/** What the streams need of the server. */
interface StreamSource {
  /** Every new state reads see; returns a stop function. */
  watch(fn: (state: LimitsState) => void): () => void;
  /** The state reads see now. */
  state(): LimitsState;
  /** The answer of `GET /limits` for that state (its body is sent as it is). */
  limits(): HttpResponse;
  /** The log position of the state reads see. */
  position(): number;
}

/** The streams of one server. */
export interface Streams {
  /**
   * Answers `GET /events` with a stream, or with the problem to send instead (503 at the
   * cap). `headers` are the answer's own (CORS), set by the caller.
   */
  open(
    req: IncomingMessage,
    res: ServerResponse,
    headers: Record<string, string>,
  ): HttpResponse | undefined;
  /** Whether the connection carries a stream (it carries nothing else from then on). */
  carries(socket: Socket): boolean;
  /**
   * Ends the oldest stream, to make room for a new connection at the connection cap (a
   * subscriber reconnects, with `Last-Event-ID`); returns its connection, or `undefined`
   * when there is no stream.
   */
  evictOldest(): Socket | undefined;
  /** Streams open now. */
  readonly count: number;
  /** Ends every stream (the server is stopping). */
  close(): void;
}

/** The `GET /events` streams: opened, fed each change, kept alive by heartbeats, capped. */
export function createStreams(
  source: StreamSource,
  { maxStreams, heartbeatMs }: { readonly maxStreams: number; readonly heartbeatMs: number },
): Streams {
  const open = new Set<ServerResponse>();
  const sockets = new WeakSet<Socket>();
  let initiator = getLimits(source.state()).throttleModeInitiator;
  // The check of the peg's backing as last told: its state and where the breaker tripped.
  let integrity = integrityKey(source.state());

  function send(res: ServerResponse, text: string): void {
    // A subscriber that has not read what was sent before: drop it rather than buffer for it
    // without bound (one event larger than the bound still goes to one that keeps up).
    if (res.writableLength > MAX_STREAM_BACKLOG) {
      open.delete(res);
      res.destroy();
      return;
    }
    res.write(text);
  }

  const limitsEvent = () =>
    `id: ${source.position()}\nevent: limits\ndata: ${source.limits().body}\n\n`;

  const stop = source.watch((state) => {
    if (open.size === 0) {
      initiator = getLimits(state).throttleModeInitiator;
      integrity = integrityKey(state);
      return;
    }
    const position = source.position();
    const now = getLimits(state).throttleModeInitiator;
    let text = '';
    if (now !== initiator) {
      if (initiator !== null)
        text += `event: throttleEnded\ndata: ${encodeJson({ initiator, position })}\n\n`;
      if (now !== null)
        text += `event: throttleStarted\ndata: ${encodeJson({ initiator: now, position })}\n\n`;
      initiator = now;
    }
    const check = integrityKey(state);
    if (check !== integrity) {
      integrity = check;
      text += `event: pegIntegrity\ndata: ${encodeJson({ ...pegIntegrity(state), position })}\n\n`;
    }
    text += limitsEvent();
    for (const res of open) send(res, text);
  });

  const heartbeat = setInterval(() => {
    for (const res of open) send(res, ': heartbeat\n\n');
  }, heartbeatMs);
  heartbeat.unref();

  return {
    open(req, res, headers) {
      if (open.size >= maxStreams)
        return problem(
          503,
          'too_many_streams',
          `at most ${maxStreams} streams at once; try again later`,
          { headers: { 'retry-after': '5' } },
        );
      res.writeHead(200, {
        ...headers,
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        // A buffering proxy (nginx) passes the stream on as it comes, not in chunks.
        'x-accel-buffering': 'no',
      });
      // The current limits first: a new subscriber, or one that resumes (Last-Event-ID),
      // starts from the present.
      open.add(res);
      sockets.add(req.socket);
      req.socket.setNoDelay(true);
      res.once('close', () => open.delete(res));
      send(res, `retry: 1000\n${limitsEvent()}`);
      return undefined;
    },
    carries(socket) {
      return sockets.has(socket);
    },
    evictOldest() {
      for (const res of open) {
        open.delete(res);
        const socket = res.socket ?? undefined;
        res.destroy();
        socket?.destroy();
        return socket;
      }
      return undefined;
    },
    get count() {
      return open.size;
    },
    close() {
      stop();
      clearInterval(heartbeat);
      for (const res of open) res.end();
      open.clear();
    },
  };
}

// What of the check of the peg's backing a subscriber is told of when it changes: its state,
// and where the breaker tripped.
function integrityKey(state: LimitsState): string {
  const check = pegIntegrity(state);
  return `${check.state}:${check.tripped?.height ?? ''}:${check.maxUnbacked ?? ''}`;
}
