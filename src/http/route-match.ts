/**
 * A request's path matched against the route table ({@link ROUTES}), once: the table
 * compiled by pattern (the static paths matched to one object made once), the routes of a
 * path with and without its operator routes, and the route for a method. Pure.
 */
import type { PathMatch, Route, RouteParams } from './messages.js';
import { ROUTES } from './routes.js';

interface Compiled {
  readonly pattern: string;
  // Each segment: a literal, or the name of a parameter (`param: true`).
  readonly segments: ReadonlyArray<{ readonly text: string; readonly param: boolean }>;
  readonly routes: ReadonlyArray<Route>;
  readonly allow: string;
  readonly methods: string;
  // The routes less the operator's, when some are an operator's (`all`: none are).
  readonly publicRoutes: ReadonlyArray<Route> | 'all';
  readonly publicAllow: string;
}

const allowOf = (routes: ReadonlyArray<Route>) =>
  routes.flatMap((r) => (r.method === 'GET' ? ['GET', 'HEAD'] : [r.method])).join(', ');

function compile(routes: ReadonlyArray<Route>): ReadonlyArray<Compiled> {
  const byPattern = new Map<string, Route[]>();
  for (const route of routes) {
    const same = byPattern.get(route.pattern);
    if (same === undefined) byPattern.set(route.pattern, [route]);
    else same.push(route);
  }
  return [...byPattern].map(([pattern, same]) => {
    const publicRoutes = same.filter((r) => r.access !== 'operator');
    return {
      pattern,
      segments: pattern.split('/').map((s) => {
        const param = /^\{(\w+)\}$/.exec(s);
        return param === null ? { text: s, param: false } : { text: param[1]!, param: true };
      }),
      routes: same,
      allow: allowOf(same),
      methods: publicRoutes.map((r) => r.method).join(', '),
      publicRoutes: publicRoutes.length === same.length ? 'all' : publicRoutes,
      publicAllow: allowOf(publicRoutes),
    };
  });
}

const COMPILED = /* @__PURE__ */ compile(ROUTES);

// A path's match, with the same match less the operator routes beside it (itself when it
// has none; undefined when all are).
function matchOf(c: Compiled, params: RouteParams): PathMatch {
  const { pattern, methods } = c;
  const match: { -readonly [K in keyof PathMatch]: PathMatch[K] } = {
    pattern,
    routes: c.routes,
    params,
    allow: c.allow,
    methods,
    public: undefined,
  };
  if (c.publicRoutes === 'all') match.public = match;
  else if (c.publicRoutes.length > 0)
    match.public = {
      pattern,
      routes: c.publicRoutes,
      params,
      allow: c.publicAllow,
      methods,
      public: undefined,
    };
  return match;
}

// The matches of the paths without parameters (`/limits`, `/window`…), made once: the
// most frequent requests then allocate nothing to be routed.
const STATIC_MATCHES: ReadonlyMap<string, PathMatch> = /* @__PURE__ */ new Map(
  COMPILED.filter((c) => c.segments.every((s) => !s.param)).map((c) => [
    c.pattern,
    Object.freeze(matchOf(c, Object.freeze({}))),
  ]),
);

/**
 * The pattern `path` matches (a query string is ignored), or `undefined`. A parameter
 * matches any one segment, an empty one too: a malformed account is its route's own
 * error (400), not a missing resource. `operator: false` leaves the operator routes out
 * (no operator token is configured: they do not exist).
 */
export function matchPath(path: string, operator: boolean): PathMatch | undefined {
  const match = STATIC_MATCHES.get(path) ?? matchParams(path);
  return match === undefined || operator ? match : match.public;
}

function matchParams(path: string): PathMatch | undefined {
  const q = path.indexOf('?');
  const bare = q < 0 ? path : path.slice(0, q);
  if (q >= 0) {
    const known = STATIC_MATCHES.get(bare);
    if (known !== undefined) return known;
  }
  const parts = bare.split('/');
  for (const c of COMPILED) {
    if (c.segments.length !== parts.length) continue;
    let ok = true;
    for (let i = 0; ok && i < parts.length; i++) {
      const s = c.segments[i]!;
      ok = s.param || s.text === parts[i];
    }
    if (!ok) continue;
    const params: Record<string, string> = {};
    for (let i = 0; i < parts.length; i++)
      if (c.segments[i]!.param) params[c.segments[i]!.text] = parts[i]!;
    return matchOf(c, params);
  }
  return undefined;
}

/** The route of a matched path for `method` (`HEAD` finds the `GET` route), or `undefined`. */
export function routeFor(match: PathMatch, method: string): Route | undefined {
  const m = method === 'HEAD' ? 'GET' : method;
  return match.routes.find((r) => r.method === m);
}
