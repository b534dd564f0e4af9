/**
 * What lets an HTTP cache (a CDN, nginx, Varnish, a browser) hold the public reads
 * (docs/operating.md, "Behind an HTTP cache"): a strong `ETag` made from the body, so it
 * changes exactly when the body does; `If-None-Match` answered 304 without a body; the
 * cache policy (`no-cache` by default: caches revalidate every time, cheaply; with a max age,
 * `public, max-age=N, stale-while-revalidate=N`); `no-store` for a read that asks for a log
 * position (`Peg-Limits-Min-Position`); and `Vary` naming every request header the answer
 * depends on. A read of an unchanged state answers with the same response object, so each
 * of these is made once per answer and variant, never per request. Pure.
 */
import { header } from './answers.js';
import type { HttpRequest, HttpResponse } from './messages.js';

/** The request header of a read that waits for a log position (read your writes). */
const MIN_POSITION = 'peg-limits-min-position';

/**
 * A strong entity tag for a body: a 53-bit hash of its UTF-16 units and its length, as
 * `"<hash>-<length>"` in base 36. Not a secret and not a defence: the bodies are the
 * service's own. Equal bodies have equal tags on every replica and in every release.
 *
 * @example
 * ```ts
 * entityTag('{"a":1}'); // '"1lsb3qwkk9hx0-7"' (the same text, the same tag)
 * ```
 */
export function entityTag(body: string): string {
  // cyrb53 (public domain): two multiplicative hashes mixed into 53 bits.
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  const hash = 4294967296 * (2097151 & h2) + (h1 >>> 0);
  return `"${hash.toString(36)}-${body.length.toString(36)}"`;
}

/**
 * Whether an `If-None-Match` value matches `etag`: `*`, or a list holding it (the weak
 * comparison RFC 9110 asks for this header: a `W/` prefix is ignored).
 */
export function noneMatchHits(ifNoneMatch: string, etag: string): boolean {
  const value = ifNoneMatch.trim();
  if (value === '*') return true;
  for (const part of value.split(',')) {
    const tag = part.trim();
    if ((tag.startsWith('W/') ? tag.slice(2) : tag) === etag) return true;
  }
  return false;
}

/** The `Cache-Control` of a public read for a max age in seconds (0: revalidate each time). */
function cachePolicy(maxAge: number): string {
  return maxAge > 0 ? `public, max-age=${maxAge}, stale-while-revalidate=${maxAge}` : 'no-cache';
}

// Each answer with its validators, per policy; and each answer's 304.
const withPolicy = new WeakMap<HttpResponse, Map<string, HttpResponse>>();
const notModifiedOf = new WeakMap<HttpResponse, HttpResponse>();

/**
 * A public read's answer as a cache may hold it: with its `ETag` (a 2xx's), its
 * `Cache-Control` (`no-store` for a read that carries `Peg-Limits-Min-Position`) and `Vary:
 * Peg-Limits-Min-Position`. Made once per answer and policy.
 */
export function withValidators(
  response: HttpResponse,
  request: HttpRequest,
  maxAge: number,
): HttpResponse {
  // Read your writes: the answer of a replica caught up to a position is no one else's.
  const policy = header(request, MIN_POSITION) === undefined ? cachePolicy(maxAge) : 'no-store';
  let perPolicy = withPolicy.get(response);
  let answer = perPolicy?.get(policy);
  if (answer !== undefined) return answer;
  const headers: Record<string, string> = {
    ...response.headers,
    'cache-control': policy,
    vary: addVary(response.headers.vary, MIN_POSITION),
  };
  if (response.status >= 200 && response.status < 300) headers.etag = entityTag(response.body);
  answer = { ...response, headers };
  if (perPolicy === undefined) {
    perPolicy = new Map();
    withPolicy.set(response, perPolicy);
  }
  perPolicy.set(policy, answer);
  return answer;
}

/** `vary` with `name` added (once). */
export function addVary(vary: string | undefined, name: string): string {
  if (vary === undefined || vary === '') return name;
  return vary.split(',').some((v) => v.trim().toLowerCase() === name) ? vary : `${vary}, ${name}`;
}

/**
 * The 304 for a request whose `If-None-Match` matches the answer's `ETag` (RFC 9110
 * §15.4.5: the validator and the caching headers, no body), or the answer itself.
 */
export function conditional(response: HttpResponse, request: HttpRequest): HttpResponse {
  const etag = response.headers.etag;
  if (etag === undefined) return response;
  const given = header(request, 'if-none-match');
  if (given === undefined || !noneMatchHits(given, etag)) return response;
  let answer = notModifiedOf.get(response);
  if (answer === undefined) {
    const { 'content-type': _type, ...rest } = response.headers;
    answer = { status: 304, headers: rest, body: '' };
    notModifiedOf.set(response, answer);
  }
  return answer;
}
