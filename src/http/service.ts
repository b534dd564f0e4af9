/**
 * A running service over a state holder: serialises the requests that change the state,
 * lets the caller persist accepted events before anything is answered, and adapts the pure
 * handler to the Fetch API. Browser-safe.
 */

import type { LimitsEvent, LimitsState } from '../core/state.js';
import { type HttpRequest, type HttpResponse, handleRequest, problem } from './handler.js';

/** Options of {@link createService} and {@link createFetchHandler}. */
export interface ServiceOptions {
  /** The state to start from. */
  readonly state: LimitsState;
  /** The operator token for `POST /admin/events` (off when unset or empty). */
  readonly adminToken?: string | undefined;
  /**
   * Called with the events a request was accepted with, before the response is sent and
   * before the new state is visible; when it throws, the request fails with 500 and the
   * state stays as it was. This is where a journal writes and flushes.
   */
  readonly persist?:
    | ((events: ReadonlyArray<LimitsEvent>, next: LimitsState) => void | Promise<void>)
    | undefined;
}

/** A service: answers requests, one state change at a time. */
export interface Service {
  /** Answers a request; requests that may change the state are answered in arrival order. */
  handle(request: HttpRequest): Promise<HttpResponse>;
  /** The current state. */
  readonly state: LimitsState;
}

/**
 * Creates a service over a state. Reads are answered at once from the current state;
 * requests that may change it (POST) run one after another, so the order in which events
 * are persisted is the order in which they are applied.
 *
 * @example
 * ```ts
 * const service = createService({ state, adminToken: 'op', persist: (events) => journal.append(events) });
 * const response = await service.handle({ method: 'GET', path: '/limits' });
 * ```
 */
export function createService(options: ServiceOptions): Service {
  let state = options.state;
  let queue: Promise<unknown> = Promise.resolve();
  const handleOptions = { adminToken: options.adminToken };

  async function change(request: HttpRequest): Promise<HttpResponse> {
    const result = handleRequest(state, request, handleOptions);
    if (result.events.length > 0 && options.persist !== undefined) {
      try {
        await options.persist(result.events, result.state);
      } catch (e) {
        const message = e instanceof Error ? e.message : String(e);
        return problem(500, 'internal_error', `the change could not be persisted: ${message}`);
      }
    }
    state = result.state;
    return result.response;
  }

  return {
    get state() {
      return state;
    },
    handle(request) {
      if (request.method.toUpperCase() !== 'POST')
        return Promise.resolve(handleRequest(state, request, handleOptions).response);
      const answer = queue.then(() => change(request));
      queue = answer.catch(() => undefined);
      return answer;
    },
  };
}

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
  const handler = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const headers: Record<string, string> = {};
    request.headers.forEach((value, key) => {
      headers[key] = value;
    });
    const body =
      request.method === 'GET' || request.method === 'HEAD'
        ? undefined
        : new Uint8Array(await request.arrayBuffer());
    const response = await service.handle({
      method: request.method,
      path: url.pathname,
      headers,
      body,
    });
    return new Response(response.body, { status: response.status, headers: response.headers });
  };
  Object.defineProperty(handler, 'state', { get: () => service.state });
  return handler as FetchHandler;
}
