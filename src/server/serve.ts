/**
 * `peg-limits serve` as a function: the service on node:http, with the journal. Node-only.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  applyAll,
  createService,
  type LimitsState,
  MAX_EVENTS_BODY,
  type Service,
} from 'peg-limits';
import { type Journal, JournalError, openJournal } from './journal.js';

/** Options of {@link startServer}. */
export interface ServerOptions {
  /** The state before the journal is replayed (from the configuration). */
  readonly state: LimitsState;
  /** The folder of the journal. */
  readonly dataDir: string;
  readonly host?: string | undefined;
  /** 0 picks a free port. */
  readonly port?: number | undefined;
  /** The operator token (`POST /admin/events` is off when unset or empty). */
  readonly adminToken?: string | undefined;
  /** Where one line per request and the warnings go; none when undefined. */
  readonly log?: ((line: string) => void) | undefined;
}

/** A running server. */
export interface RunningServer {
  /** `http://host:port` */
  readonly url: string;
  readonly service: Service;
  readonly journal: Journal;
  /** Stops accepting, finishes the requests in flight, closes the journal. */
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Uint8Array | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    // Past the largest body any route takes, keep one byte to say so and drop the rest.
    if (size > MAX_EVENTS_BODY) continue;
    chunks.push(chunk);
    size += chunk.length;
  }
  if (size === 0)
    return req.method === 'GET' || req.method === 'HEAD' ? undefined : new Uint8Array();
  const all = Buffer.concat(chunks);
  return all.subarray(0, Math.min(all.length, MAX_EVENTS_BODY + 1));
}

/**
 * Replays the journal in `dataDir` over `state`, then serves the interface.
 *
 * @throws JournalError when the journal is damaged, or replays into an invalid event
 */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const log = options.log;
  const journal = await openJournal(options.dataDir);
  for (const warning of journal.warnings) log?.(`warning: ${warning}`);
  let state = options.state;
  for (const batch of journal.batches) {
    const r = applyAll(state, batch.events);
    if (!r.ok) {
      await journal.close();
      throw new JournalError(
        `${journal.path}:${batch.line}: cannot replay: ${r.error.message}; refusing to start`,
      );
    }
    state = r.state;
  }
  const service = createService({
    state,
    adminToken: options.adminToken,
    persist: (events) => journal.append(events),
  });
  const server: Server = createServer((req, res) => {
    const started = performance.now();
    readBody(req)
      .then((body) =>
        service.handle({
          method: req.method ?? 'GET',
          path: req.url ?? '/',
          headers: req.headers,
          body,
        }),
      )
      .then(
        (response) => {
          res.writeHead(response.status, response.headers);
          res.end(response.body);
          log?.(
            `${req.method} ${req.url} ${response.status} ${(performance.now() - started).toFixed(1)}ms`,
          );
        },
        (e: unknown) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end('internal error');
          log?.(`${req.method} ${req.url} 500 ${(e as Error).message}`);
        },
      );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8080, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${address.port}`,
    service,
    journal,
    close() {
      closing ??= new Promise<void>((resolve) => {
        // Keep-alive connections turn idle once their request is answered: close them then,
        // rather than waiting for their timeout.
        const sweep = setInterval(() => server.closeIdleConnections(), 50);
        server.close(() => {
          clearInterval(sweep);
          resolve();
        });
        server.closeIdleConnections();
      }).then(() => journal.close());
      return closing;
    },
  };
}
