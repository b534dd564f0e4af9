// The route table (src/http/routes.ts): the one place the service's resources are written.
import { describe, expect, test } from 'vitest';
import { matchPath } from '../../src/http/route-match.js';
import { ROUTES } from '../../src/http/routes.js';
import { createLimitsState, decodeJson, handleRequest, openApiDocument } from '../../src/index.js';
import { admitRequest } from '../../src/internal.js';
import { auditRoute } from '../../src/server/node-http/audit-route.js';
import { feedRoutes } from '../../src/server/stacks/feed-routes.js';

// The server's own routes: the audit trail, and a Stacks feed's blocks on the service's port.
const SERVER_ROUTES = [
  auditRoute({} as never),
  ...feedRoutes({ configured: false, observer: () => undefined }),
];

const state = createLimitsState();
const operator = { adminToken: 'op' };

describe('the route table', () => {
  test("the OpenAPI document has exactly the paths and methods of the table and the server's own routes, with a preflight on every public path", () => {
    const fromTable = [...ROUTES, ...SERVER_ROUTES]
      .map((r) => `${r.method.toLowerCase()} ${r.pattern}`)
      .sort();
    const fromDocument: string[] = [];
    const preflights: string[] = [];
    for (const [path, item] of Object.entries(openApiDocument.paths)) {
      for (const method of Object.keys(item)) {
        if (method === 'options') preflights.push(path);
        else fromDocument.push(`${method} ${path}`);
      }
    }
    expect(fromDocument.sort()).toEqual(fromTable);
    const publicPaths = [
      ...new Set(ROUTES.filter((r) => r.access === 'public').map((r) => r.pattern)),
    ];
    expect(preflights.sort()).toEqual(publicPaths.sort());
  });

  test('a path matches one pattern, its parameters still encoded and its query string ignored', () => {
    expect(matchPath('/limits/al%20ice/withdrawals/5?x=1', false)).toMatchObject({
      pattern: '/limits/{account}/withdrawals/{amount}',
      params: { account: 'al%20ice', amount: '5' },
    });
    expect(matchPath('/limits', false)?.pattern).toBe('/limits');
    // An empty segment is a malformed parameter, not a missing resource.
    expect(matchPath('/window/', false)?.pattern).toBe('/window/{account}');
    expect(matchPath('/limits/a/transfers/5', false)).toBeUndefined();
    expect(matchPath('/limits/a/b', false)).toBeUndefined();
    // The operator route exists only with an operator token.
    expect(matchPath('/admin/events', false)).toBeUndefined();
    expect(matchPath('/admin/events', true)?.pattern).toBe('/admin/events');
  });

  test('admission hands the match on, and the handler answers from it without matching again', () => {
    const admitted = admitRequest({ method: 'GET', path: '/limits' });
    if (!admitted.ok) throw new Error('refused');
    expect(admitted.match?.pattern).toBe('/limits');
    // A match for another path is taken as given: proof the path is not matched twice.
    const other = matchPath('/window', false);
    const r = handleRequest(state, { method: 'GET', path: '/limits', match: other });
    expect(Object.keys(decodeJson(r.response.body) as object)).toContain('sums');
  });

  // What each route answers through handleRequest alone, without and with the operator's
  // token: every route is reached and answers as its own resource (a 404 here is the
  // resource's own code, never the table's not_found, but for the server's two routes).
  const ANSWERS: Record<string, [number, string, number, string]> = {
    'GET /': [200, '', 200, ''],
    'GET /limits': [200, '', 200, ''],
    'GET /limits/{account}/withdrawals/{amount}': [200, '', 200, ''],
    'GET /limits/{account}/deposits/{amount}': [200, '', 200, ''],
    'GET /window': [200, '', 200, ''],
    'GET /window/{account}': [404, 'window_not_found', 404, 'window_not_found'],
    'GET /mint-window': [200, '', 200, ''],
    'GET /mint-window/{account}': [404, 'window_not_found', 404, 'window_not_found'],
    'GET /integrity': [200, '', 200, ''],
    'GET /limits/{account}': [404, 'account_not_found', 404, 'account_not_found'],
    // Emily's private writes: an operator's, each with a body to read.
    'POST /limits': [401, 'invalid_token', 415, 'unsupported_media_type'],
    'POST /limits/{account}': [401, 'invalid_token', 415, 'unsupported_media_type'],
    'POST /throttle': [401, 'invalid_token', 415, 'unsupported_media_type'],
    'PATCH /throttle/activate': [401, 'invalid_token', 400, 'invalid_request'],
    'PATCH /throttle/deactivate': [401, 'invalid_token', 400, 'invalid_request'],
    'POST /chainstate': [401, 'invalid_token', 415, 'unsupported_media_type'],
    'PUT /chainstate': [401, 'invalid_token', 415, 'unsupported_media_type'],
    'POST /start_throttle': [415, 'unsupported_media_type', 415, 'unsupported_media_type'],
    'POST /admin/events': [401, 'invalid_token', 415, 'unsupported_media_type'],
    'GET /admin/changes': [401, 'invalid_token', 200, ''],
    'POST /admin/changes/{id}/approve': [401, 'invalid_token', 404, 'change_not_found'],
    'DELETE /admin/changes/{id}': [401, 'invalid_token', 404, 'change_not_found'],
    'GET /openapi.json': [200, '', 200, ''],
    // The node:http server's own: a service alone says so.
    'GET /events': [404, 'not_found', 404, 'not_found'],
    'GET /healthz': [200, '', 200, ''],
    'GET /readyz': [200, '', 200, ''],
    'GET /metrics': [404, 'not_found', 404, 'not_found'],
  };

  test('every route answers through handleRequest with its own status and code, with and without a token', () => {
    expect(Object.keys(ANSWERS).sort()).toEqual(
      ROUTES.map((r) => `${r.method} ${r.pattern}`).sort(),
    );
    const codeOf = (body: string) => {
      const parsed = body.startsWith('{') ? (decodeJson(body) as { code?: string }) : {};
      return parsed.code ?? '';
    };
    for (const route of ROUTES) {
      const key = `${route.method} ${route.pattern}`;
      const [status, code, authedStatus, authedCode] = ANSWERS[key]!;
      const path = route.pattern
        .replace('{account}', 'alice')
        .replace('{amount}', '5')
        .replace('{id}', '1');
      const r = handleRequest(state, { method: route.method, path }, operator);
      expect([r.response.status, codeOf(r.response.body)], key).toEqual([status, code]);
      const authed = handleRequest(
        state,
        { method: route.method, path, headers: { authorization: 'Bearer op' } },
        operator,
      );
      expect([authed.response.status, codeOf(authed.response.body)], key).toEqual([
        authedStatus,
        authedCode,
      ]);
      if (route.pattern === '/metrics' || route.pattern === '/events')
        expect(r.response.body).toContain('peg-limits serve');
    }
  });

  test("the server's own routes are no resource of the handler alone, and no route of the table is one", () => {
    for (const route of SERVER_ROUTES) {
      const path = route.pattern;
      const r = handleRequest(
        state,
        { method: route.method, path, headers: { authorization: 'Bearer op' } },
        operator,
      );
      expect([r.response.status, decodeJson(r.response.body)], path).toMatchObject([
        404,
        { code: 'not_found', detail: `no resource at ${path}` },
      ]);
      expect(route.serve, path).toBeTypeOf('function');
    }
    expect(ROUTES.filter((r) => r.serve !== undefined)).toEqual([]);
  });
});

describe('HEAD and OPTIONS', () => {
  test('HEAD is answered as GET on a GET route (an adapter sends no body) and 405 on a POST route', () => {
    for (const route of ROUTES.filter((r) => r.method === 'GET')) {
      const path = route.pattern.replace('{account}', 'alice').replace('{amount}', '5');
      const get = handleRequest(state, { method: 'GET', path });
      const head = handleRequest(state, { method: 'HEAD', path });
      expect(head.response, path).toEqual(get.response);
    }
    const r = handleRequest(state, { method: 'HEAD', path: '/start_throttle' });
    expect(r.response.status).toBe(405);
    expect(r.response.headers.allow).toBe('POST');
  });

  test('OPTIONS is a 204 preflight on a public path while CORS is on, and 405 otherwise', () => {
    const pre = handleRequest(state, { method: 'OPTIONS', path: '/limits' });
    expect(pre.response.status).toBe(204);
    expect(pre.response.headers['access-control-allow-methods']).toBe('GET, OPTIONS');
    const off = handleRequest(state, { method: 'OPTIONS', path: '/limits' }, { cors: false });
    expect(off.response.status).toBe(405);
    const admin = handleRequest(state, { method: 'OPTIONS', path: '/admin/events' }, operator);
    expect(admin.response.status).toBe(405);
    expect(admin.response.headers['access-control-allow-origin']).toBeUndefined();
  });
});

test('a path without parameters is matched to one object made once, and operator paths only with a token', () => {
  expect(matchPath('/window', false)).toBe(matchPath('/window', true));
  expect(matchPath('/limits', false)).toBe(matchPath('/limits', false));
  expect(matchPath('/limits', true)).toBe(matchPath('/limits', true));
  expect(matchPath('/limits', false)?.params).toEqual({});
  // A path whose operator routes stand beside public ones: without a token, they are not there.
  expect(matchPath('/limits', true)?.allow).toBe('GET, HEAD, POST');
  expect(matchPath('/limits', false)?.allow).toBe('GET, HEAD');
  expect(matchPath('/limits/alice', false)?.allow).toBe('GET, HEAD');
  expect(matchPath('/chainstate', false)).toBeUndefined();
  expect(matchPath('/admin/events', false)).toBeUndefined();
  expect(matchPath('/admin/events', true)?.pattern).toBe('/admin/events');
  expect(matchPath('/limits?x=1', false)?.pattern).toBe('/limits');
});
