/**
 * What only the node:http server can answer, as routes of its table like any other it owns
 * (`Route.serve`, registered through `ServiceOptions.routes` in place of the table's
 * placeholders, which a service on its own answers 404): `GET /metrics`, the Prometheus
 * text, and `GET /events`, whose answer is the head of an event stream
 * (`text/event-stream`) that the listener then keeps open and feeds. Node-only.
 */
import type { HttpResponse } from 'peg-limits';
import { problem, ROUTES, type Route } from '../../internal.js';
import type { ServerMetrics } from '../ops/index.js';

/** The content type of an event stream's head: the listener streams such an answer. */
const EVENT_STREAM = 'text/event-stream; charset=utf-8';

/** Whether an answer is the head of an event stream, which the listener keeps open and feeds. */
export function isEventStream(response: HttpResponse): boolean {
  return response.status === 200 && response.headers['content-type'] === EVENT_STREAM;
}

// The table's route of `method` and `pattern`, as the service describes it (the table has
// both placeholders: a test holds the server's answers of both).
function tableRoute(method: string, pattern: string): Route {
  return ROUTES.find((r) => r.method === method && r.pattern === pattern)!;
}

/**
 * `GET /events`: the stream's head; the listener opens the stream (or refuses it at its
 * cap). A `HEAD` has no stream: the table's answer.
 */
function streamRoute(): Route {
  const { handle: placeholder, ...described } = tableRoute('GET', '/events');
  return {
    ...described,
    serve: async (request) =>
      request.method.toUpperCase() === 'GET'
        ? { status: 200, headers: { 'content-type': EVENT_STREAM }, body: '' }
        : // The placeholder reads nothing of the state: its answer is a fixed 404.
          placeholder!(undefined as never, request, {}, {}, undefined).response,
  };
}

/** `GET /metrics`: the Prometheus text of the server's metrics. */
function metricsRoute(metrics: ServerMetrics): Route {
  const { handle: _placeholder, ...described } = tableRoute('GET', '/metrics');
  return {
    ...described,
    async serve() {
      try {
        const body = await metrics.render();
        return { status: 200, headers: { 'content-type': metrics.contentType }, body };
      } catch (e) {
        return problem(500, 'internal_error', (e as Error).message);
      }
    },
  };
}

/**
 * The service's route table with the server's own answers in place of the placeholders
 * (`/events` always, `/metrics` while metrics are on), then `extra`: the server's own
 * resources (the audit trail, a feed's blocks).
 */
export function serverRoutes(
  metrics: ServerMetrics | undefined,
  extra: ReadonlyArray<Route>,
): ReadonlyArray<Route> {
  const own = [streamRoute(), ...(metrics === undefined ? [] : [metricsRoute(metrics)])];
  const table = ROUTES.map(
    (r) => own.find((o) => o.method === r.method && o.pattern === r.pattern) ?? r,
  );
  return [...table, ...extra];
}
