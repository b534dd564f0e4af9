/**
 * What the server tells of each answered request: the metrics' request series, and one
 * line per request (text, or fields for the JSON log). `route` is the pattern the request
 * matched (the metrics' label), never the raw path. Node-only.
 */
import type { IncomingMessage } from 'node:http';
import type { RequestLine, ServerMetrics } from '../ops/index.js';

/** Tells of one answered request: its status, when it started, the route it matched. */
export type Logged = (req: IncomingMessage, status: number, started: number, route: string) => void;

/** Where the request lines go. */
interface RequestLogOptions {
  readonly metrics: ServerMetrics | undefined;
  /** One text line per request; none when undefined. */
  readonly logLine: ((line: string) => void) | undefined;
  /** Each request as fields instead (the JSON log); wins over `logLine`. */
  readonly logRequest: ((line: RequestLine) => void) | undefined;
  /** The log position of the state reads see. */
  readonly position: () => number;
}

/** What the server tells of each answered request. */
export interface RequestLog {
  readonly logged: Logged;
  /** Whether anyone reads a request's time (else it is not taken). */
  readonly timed: boolean;
}

/** The request log: a line (or fields) for each answered request, and the metrics' timing. */
export function createRequestLog(options: RequestLogOptions): RequestLog {
  const { metrics, logLine: log, logRequest } = options;
  return {
    timed: log !== undefined || logRequest !== undefined || metrics !== undefined,
    logged(req, status, started, route) {
      if (metrics !== undefined)
        metrics.observeRequest(route, status, (performance.now() - started) / 1000);
      if (logRequest !== undefined) {
        const ms = Math.round((performance.now() - started) * 10) / 10;
        const position = options.position();
        logRequest({ method: req.method ?? '', route, url: req.url ?? '', status, ms, position });
        return;
      }
      if (log === undefined) return;
      log(`${req.method} ${req.url} ${status} ${(performance.now() - started).toFixed(1)}ms`);
    },
  };
}
