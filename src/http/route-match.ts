/**
 * A request's path matched against a route table, once: the service's ({@link ROUTES}), or
 * the table an adapter makes of it and its own routes ({@link routeTable}). Each table is
 * compiled by pattern once (the static paths matched to one object made once), with the
 * routes of a path with and without its operator routes, and the route for a method. Pure.
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
function staticMatches(compiled: ReadonlyArray<Compiled>): ReadonlyMap<string, PathMatch> {
  return new Map(
    compiled
      .filter((c) => c.segments.every((s) => !s.param))
      .map((c) => [c.pattern, Object.freeze(matchOf(c, Object.freeze({})))]),
  );
}

/**
 * How a table matches a path: the pattern `path` matches (a query string is ignored), or
 * `undefined`. A parameter matches any one segment, an empty one too: a malformed account is
 * its route's own error (400), not a missing resource. `operator: false` leaves the operator
 * routes out (no operator is configured: they do not exist).
 */
type MatchPath = (path: string, operator: boolean) => PathMatch | undefined;

function matcher(routes: ReadonlyArray<Route>): MatchPath {
  const compiled = compile(routes);
  const statics = staticMatches(compiled);
  return (path, operator) => {
    const match = statics.get(path) ?? matchParams(compiled, statics, path);
    return match === undefined || operator ? match : match.public;
  };
}

/** The service's own table matched: see {@link MatchPath}. */
export const matchPath: MatchPath = /* @__PURE__ */ matcher(ROUTES);

const tables = new WeakMap<ReadonlyArray<Route>, MatchPath>();

/**
 * How a table of routes matches a path (compiled once per table): an adapter's table is the
 * service's routes and its own (`ServiceOptions.routes`); without one, {@link matchPath}.
 */
export function routeTable(routes: ReadonlyArray<Route> | undefined): MatchPath {
  if (routes === undefined || routes === ROUTES) return matchPath;
  let match = tables.get(routes);
  if (match === undefined) {
    match = matcher(routes);
    tables.set(routes, match);
  }
  return match;
}

function matchParams(
  compiled: ReadonlyArray<Compiled>,
  statics: ReadonlyMap<string, PathMatch>,
  path: string,
): PathMatch | undefined {
  const q = path.indexOf('?');
  const bare = q < 0 ? path : path.slice(0, q);
  if (q >= 0) {
    const known = statics.get(bare);
    if (known !== undefined) return known;
  }
  const parts = bare.split('/');
  for (const c of compiled) {
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
