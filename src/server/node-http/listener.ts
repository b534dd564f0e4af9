/**
 * The node:http listener under the server: made with the limits on clients node:http
 * enforces itself, listening, and closing while the requests in flight finish. Node-only.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ServerLimits } from './client-limits.js';
import type { RequestHandler } from './request-handler.js';

/**
 * Stops listening; kept-alive connections turn idle once their request is answered, and are
 * closed then rather than at their time-out.
 */
export function closeListener(server: Server, stopGuard: () => void): Promise<void> {
  return new Promise<void>((resolve) => {
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    server.close(() => {
      clearInterval(sweep);
      stopGuard();
      resolve();
    });
    server.closeIdleConnections();
  });
}

/** The node:http server, with the limits on clients it enforces itself. */
export function listener(limits: ServerLimits, handler: RequestHandler): Server {
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: limits.checkIntervalMs,
      maxHeaderSize: limits.maxHeaderBytes,
    },
    handler.onRequest,
  );
  // Admission comes before 100 Continue: a refused client is told so instead of sending.
  server.on('checkContinue', handler.onRequest);
  return server;
}

/** Listens on `host`:`port`; resolves with the URL it listens at. */
export async function listen(server: Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const at = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${at}:${address.port}`;
}
