/**
 * The service as a Fetch-API handler (`(Request) => Promise<Response>`), for any
 * Fetch-style framework: a request admitted before its body is read (route, token, media
 * type, size), as the node:http server admits it, and no more read than the route takes.
 * Browser-safe.
 */

import type { LimitsState } from '../core/state.js';
import { declaredTooLarge, payloadTooLarge, readBody } from './body.js';
import { admitRequest } from './handler.js';
import type { HttpResponse } from './messages.js';
import { createService, handleOptionsOf, type ServiceOptions } from './service.js';

/** A Fetch-API handler with the service's current state. */
export interface FetchHandler {
  (request: Request): Promise<Response>;
  readonly state: LimitsState;
}

/**
 * Serves the interface from any Fetch-style framework (Hono, Bun.serve, Deno.serve,
 * Cloudflare Workers, Next.js route handlers…).
 *
 * @example
 * ```ts
 * const handler = createFetchHandler({ state: createLimitsState() });
 * Deno.serve(handler);                        // or: export default { fetch: handler }
 * const r = await handler(new Request('http://x/limits'));
 * r.status; // 200
 * ```
 */
export function createFetchHandler(options: ServiceOptions): FetchHandler {
  const service = createService(options);
  const handleOptions = handleOptionsOf(options);
  const toResponse = (r: HttpResponse) =>
    new Response(r.status === 204 || r.status === 304 ? null : r.body, {
      status: r.status,
      headers: r.headers,
    });
  const handler = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const headers: Record<string, string> = {};
    request.headers.forEach((value, key) => {
      headers[key] = value;
    });
    const head = { method: request.method, path: url.pathname, headers };
    // Admitted first, as the node:http server does: route, method, token and media type
    // decide before a byte of the body is read, and no more than the route takes is read.
    const admitted = admitRequest(head, handleOptions);
    if (!admitted.ok) return toResponse(admitted.response);
    let body: Uint8Array | undefined;
    if (admitted.maxBody > 0) {
      if (declaredTooLarge(headers, admitted.maxBody)) {
        request.body?.cancel().catch(() => undefined);
        return toResponse(payloadTooLarge(admitted.maxBody));
      }
      const read = await readBody(request.body, admitted.maxBody);
      if (!read.ok) return toResponse(read.response);
      body = read.body;
    }
    return toResponse(await service.handle({ ...head, body, match: admitted.match }));
  };
  Object.defineProperty(handler, 'state', { get: () => service.state });
  return handler as FetchHandler;
}
