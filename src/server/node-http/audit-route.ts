/**
 * `GET /admin/audit?after=N&limit=M`, the server's own route (any operator): the audit
 * trail's records after position `N` (without `after`: from the first), in order, each
 * record's exact text, read from the log. Node-only.
 */
import type { EventLog, HttpResponse } from 'peg-limits';
import { problem, type Route } from '../../internal.js';

/** The most records one `GET /admin/audit` answers with, and how many it gives unasked. */
const MAX_AUDIT_LIMIT = 10_000;
const DEFAULT_AUDIT_LIMIT = 1_000;

// `after` (default 0: from the first record) and `limit` of GET /admin/audit.
function auditQuery(
  path: string,
): { ok: true; after: number; limit: number } | { ok: false; response: HttpResponse } {
  const q = path.indexOf('?');
  const params = new URLSearchParams(q < 0 ? '' : path.slice(q + 1));
  const read = (name: string, fallback: number, max: number) => {
    const text = params.get(name);
    if (text === null) return fallback;
    return /^[0-9]{1,16}$/.test(text) && Number(text) <= max ? Number(text) : undefined;
  };
  const after = read('after', 0, Number.MAX_SAFE_INTEGER);
  const limit = read('limit', DEFAULT_AUDIT_LIMIT, MAX_AUDIT_LIMIT);
  if (after === undefined || limit === undefined) {
    // Only what was sent and is wrong is named.
    const wrong = [
      after === undefined
        ? `after must be a non-negative integer (a log position), got ${JSON.stringify(params.get('after')?.slice(0, 20))}`
        : undefined,
      limit === undefined
        ? `limit must be an integer from 0 to ${MAX_AUDIT_LIMIT}, got ${JSON.stringify(params.get('limit')?.slice(0, 20))}`
        : undefined,
    ].filter((w) => w !== undefined);
    return { ok: false, response: problem(400, 'bad_request', wrong.join('; ')) };
  }
  return { ok: true, after, limit };
}

/** The audit trail's route over `log` (a log that keeps no trail answers 404, saying so). */
export function auditRoute(log: EventLog): Route {
  return {
    method: 'GET',
    pattern: '/admin/audit',
    access: 'operator',
    maxBody: 0,
    async serve(request) {
      const query = auditQuery(request.path);
      if (!query.ok) return query.response;
      if (log.audit === undefined)
        return problem(404, 'not_found', 'no audit trail here: this log keeps none');
      const lines = await log.audit(query.after, query.limit);
      return {
        status: 200,
        headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
        body: `[${lines.join(',')}]`,
      };
    },
  };
}
