// The route table (src/http/routes.ts): the one place the service's resources are written.
import { describe, expect, test } from 'vitest';
import {
  admitRequest,
  createLimitsState,
  decodeJson,
  handleRequest,
  matchPath,
  openApiDocument,
  ROUTES,
} from '../../src/index.js';

const state = createLimitsState();
const operator = { adminToken: 'op' };

describe('the route table', () => {
  test('the OpenAPI document has exactly the paths and methods of the table, with a preflight on every public path', () => {
    const fromTable = ROUTES.map((r) => `${r.method.toLowerCase()} ${r.pattern}`).sort();
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

  test('a path matches one pattern, with its parameters still encoded; a query string is ignored', () => {
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

  test('every route is reachable through handleRequest with its method', () => {
    for (const route of ROUTES) {
      const path = route.pattern.replace('{account}', 'alice').replace('{amount}', '5');
      const r = handleRequest(state, { method: route.method, path }, operator);
      // Its own answer: never a missing resource or a method it does not answer.
      expect(r.response.status, `${route.method} ${path}`).not.toBe(405);
      // GET /metrics and GET /events are the node:http server's: a service alone says so.
      if (route.pattern === '/metrics' || route.pattern === '/events')
        expect(r.response.body).toContain('peg-limits serve');
      else expect(r.response.body, `${route.method} ${path}`).not.toContain('"not_found"');
    }
  });
});

describe('HEAD and OPTIONS', () => {
  test('HEAD on a GET route is the GET answer (an adapter sends no body); on a POST route it is 405', () => {
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

  test('OPTIONS on a public path is a 204 preflight; with CORS off, and on the operator route, it is 405', () => {
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
  expect(matchPath('/limits', false)).toBe(matchPath('/limits', true));
  expect(matchPath('/limits', false)?.params).toEqual({});
  expect(matchPath('/admin/events', false)).toBeUndefined();
  expect(matchPath('/admin/events', true)?.pattern).toBe('/admin/events');
  expect(matchPath('/limits?x=1', false)?.pattern).toBe('/limits');
});
