/**
 * Operators: who may send events, and which (docs/semantics.md, "Operators"). Each has a
 * name, the hash of its bearer token and its scopes; the service keeps only the hashes and
 * finds an operator by the hash of the token it is given, with the same work for every
 * caller. `adminToken` (`PEG_LIMITS_ADMIN_TOKEN`) is the operator `admin` with every scope.
 * Browser-safe.
 */
import { describe, LimitsError, type Result } from '../core/errors.js';
import { hashOperatorToken, isTokenHash } from '../core/keys.js';
import { isAccountName, isRecord } from '../core/limits.js';
import { isScope, SCOPES } from '../core/scopes.js';
import { header, problem } from './answers.js';
import type { HttpRequest, HttpResponse, Operator } from './messages.js';

export type { Operator } from './messages.js';

/** The name of the operator `adminToken` stands for. */
export const ADMIN_OPERATOR = 'admin';

/**
 * Checks a list of operators as a configuration gives it: each a `{ name, tokenHash,
 * scopes }` with a valid name, a well-formed hash and known scopes, no name or hash twice.
 * Errors name the field at fault (`operators[1].scopes[0]`).
 *
 * @param reserved - names taken already (`admin` when an admin token is set)
 * @example
 * ```ts
 * operatorsFromJson([{ name: 'feeder', tokenHash: hashOperatorToken(token), scopes: ['chain'] }]);
 * // { ok: true, operators: [ … ] }
 * ```
 */
export function operatorsFromJson(
  value: unknown,
  reserved: ReadonlyArray<string> = [],
  path = 'operators',
): Result<{ readonly operators: ReadonlyArray<Operator> }> {
  const invalid = (at: string, message: string) => ({
    ok: false as const,
    error: new LimitsError('invalid_option', message, at),
  });
  if (!Array.isArray(value))
    return invalid(path, `expected an array of operators, got ${describe(value)}`);
  const names = new Set(reserved);
  const hashes = new Set<string>();
  const out: Operator[] = [];
  for (const [i, item] of value.entries()) {
    const at = `${path}[${i}]`;
    if (!isRecord(item))
      return invalid(at, `expected { name, tokenHash, scopes }, got ${describe(item)}`);
    for (const key of Object.keys(item))
      if (!['name', 'tokenHash', 'scopes'].includes(key))
        return invalid(`${at}.${key}`, 'unknown field; expected name, tokenHash, scopes');
    if (!isAccountName(item.name))
      return invalid(
        `${at}.name`,
        `expected a name of 1 to 256 characters without control characters, got ${describe(item.name)}`,
      );
    if (names.has(item.name))
      return invalid(`${at}.name`, `the name ${JSON.stringify(item.name)} is taken already`);
    if (!isTokenHash(item.tokenHash))
      return invalid(
        `${at}.tokenHash`,
        'expected "sha256:" and 64 lowercase hex digits, as `peg-limits token` prints it',
      );
    if (hashes.has(item.tokenHash))
      return invalid(`${at}.tokenHash`, 'another operator has the same token');
    const scopes = item.scopes;
    if (!Array.isArray(scopes) || scopes.length === 0)
      return invalid(`${at}.scopes`, `expected a non-empty array of ${SCOPES.join(', ')}`);
    for (const [j, scope] of scopes.entries())
      if (!isScope(scope))
        return invalid(
          `${at}.scopes[${j}]`,
          `unknown scope ${describe(scope)}; expected ${SCOPES.join(', ')}`,
        );
    if (new Set(scopes).size !== scopes.length)
      return invalid(`${at}.scopes`, 'a scope is listed twice');
    names.add(item.name);
    hashes.add(item.tokenHash);
    out.push({
      name: item.name,
      tokenHash: item.tokenHash,
      scopes: SCOPES.filter((s) => scopes.includes(s)),
    });
  }
  return { ok: true, operators: out };
}

// The operators by token hash, made once per list and admin token.
const registries = new WeakMap<
  ReadonlyArray<Operator>,
  Map<string, ReadonlyMap<string, Operator>>
>();
const NONE: ReadonlyArray<Operator> = [];

/** The operators a service answers to, by the hash of their tokens (admin included). */
export function operatorsByHash(
  operators: ReadonlyArray<Operator> | undefined,
  adminToken: string | undefined,
): ReadonlyMap<string, Operator> {
  // An empty list is the one empty list: a caller that makes a fresh one per request still
  // finds its registry made.
  const list = operators === undefined || operators.length === 0 ? NONE : operators;
  let byAdmin = registries.get(list);
  if (byAdmin === undefined) {
    byAdmin = new Map();
    registries.set(list, byAdmin);
  }
  const key = adminToken ?? '';
  let registry = byAdmin.get(key);
  if (registry === undefined) {
    const map = new Map<string, Operator>();
    if (key !== '') {
      const tokenHash = hashOperatorToken(key);
      map.set(tokenHash, { name: ADMIN_OPERATOR, tokenHash, scopes: SCOPES });
    }
    for (const op of list) if (!map.has(op.tokenHash)) map.set(op.tokenHash, op);
    registry = map;
    // A few admin tokens at most per list (tests); keep the cache from growing without bound.
    if (byAdmin.size > 16) byAdmin.clear();
    byAdmin.set(key, registry);
  }
  return registry;
}

// RFC 6750: the scheme, one space, a b64token.
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
// A token as `x-api-key` carries it (Emily's API Gateway key): the same characters.
const API_KEY = /^ *([A-Za-z0-9\-._~+/]+=*) *$/;

// The token a header carries (undefined when it is absent or blank), or the 400 for one that
// holds none.
function tokenIn(
  value: string | undefined,
  form: RegExp,
  refusal: string,
): string | undefined | { readonly ok: false; readonly response: HttpResponse } {
  if (value === undefined || value.trim() === '') return undefined;
  const m = form.exec(value);
  return m === null ? { ok: false, response: problem(400, 'bad_request', refusal) } : m[1]!;
}

/**
 * The operator token a request presents: in `Authorization: Bearer <token>` or in
 * `x-api-key: <token>` (the header Emily's private API takes), read here for both (`''` when
 * neither is sent); 400 `bad_request` for a header that holds no token, or for the two
 * headers naming different tokens.
 *
 * @example
 * ```ts
 * presentedToken({ method: 'POST', path: '/limits', headers: { 'x-api-key': 'tok' } });
 * // { ok: true, token: 'tok' }
 * ```
 */
function presentedToken(
  request: HttpRequest,
):
  | { readonly ok: true; readonly token: string }
  | { readonly ok: false; readonly response: HttpResponse } {
  const fromBearer = tokenIn(
    header(request, 'authorization'),
    BEARER,
    'the Authorization header must be "Bearer <token>" (the token as `peg-limits token` printed it)',
  );
  if (typeof fromBearer === 'object') return fromBearer;
  const fromKey = tokenIn(
    header(request, 'x-api-key'),
    API_KEY,
    'the x-api-key header must be an operator token (as `peg-limits token` printed it)',
  );
  if (typeof fromKey === 'object') return fromKey;
  if (fromBearer !== undefined && fromKey !== undefined && fromBearer !== fromKey)
    return {
      ok: false,
      response: problem(
        400,
        'bad_request',
        'Authorization and x-api-key carry different tokens: send one of them, or the same token in both',
      ),
    };
  return { ok: true, token: fromBearer ?? fromKey ?? '' };
}

/**
 * Finds the operator a request's token names ({@link presentedToken}: `Authorization:
 * Bearer <token>` or `x-api-key`): the operator, or the answer (401 `invalid_token` for a
 * missing, unknown or removed token, after the same one SHA-256; 400 `bad_request` for a
 * header that holds no token, or two that disagree).
 */
export function authenticate(
  request: HttpRequest,
  registry: ReadonlyMap<string, Operator>,
):
  | { readonly ok: true; readonly operator: Operator }
  | { readonly ok: false; readonly response: HttpResponse } {
  const given = presentedToken(request);
  if (!given.ok) return given;
  const token = given.token;
  // The same work whoever calls: one hash (or one look-up of it), one lookup.
  const operator = registry.get(tokenHashOf(token));
  if (operator === undefined || token === '') return { ok: false, response: invalidToken() };
  return { ok: true, operator };
}

// The hashes of the tokens seen lately: a feeder's every request carries the same token,
// and each request is authenticated twice (admitted, then handled). Bounded in entries and
// in the length of a token kept (one made by `generateOperatorToken` has 43 characters);
// any token, known or not, is kept alike, so a hit says nothing of a token's validity.
const recentHashes = new Map<string, string>();
const RECENT_HASHES = 256;
const CACHED_TOKEN_LENGTH = 128;

function tokenHashOf(token: string): string {
  const known = recentHashes.get(token);
  if (known !== undefined) return known;
  const hash = hashOperatorToken(token);
  if (token.length <= CACHED_TOKEN_LENGTH) {
    if (recentHashes.size >= RECENT_HASHES) recentHashes.clear();
    recentHashes.set(token, hash);
  }
  return hash;
}

/** 401 `invalid_token`. */
function invalidToken(): HttpResponse {
  return problem(
    401,
    'invalid_token',
    'a valid operator token is required (Authorization: Bearer <token>, or x-api-key: <token>)',
    { headers: { 'www-authenticate': 'Bearer' } },
  );
}
