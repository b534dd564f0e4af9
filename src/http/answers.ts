/**
 * What every route and adapter answers with: the JSON and problem (RFC 9457) answers, and the
 * body and token checks the routes share (the request and response types are in
 * `messages.ts`). Pure.
 */

import { type LimitsError, located } from '../core/errors.js';
import { isAccountName } from '../core/limits.js';
import { encodeJson, tryDecodeJson } from './json.js';
import type { HttpRequest, HttpResponse } from './messages.js';

/** The largest body `POST /start_throttle` takes. */
export const MAX_THROTTLE_BODY = 16 * 1024;
/** The largest body `POST /admin/events` takes. */
export const MAX_EVENTS_BODY = 1024 * 1024;
/** The largest `/new_block` body read (a block's transactions come with it). */
export const MAX_BLOCK_BODY = 64 * 1024 * 1024;

/** What a malformed account in a path is told. */
export const INVALID_ACCOUNT =
  'the account must be 1 to 256 characters without control characters, percent-encoded';

/** The account a path segment names (percent-decoded), or undefined when it names none. */
export function accountOf(segment: string | undefined): string | undefined {
  try {
    const account = decodeURIComponent(segment ?? '');
    return isAccountName(account) ? account : undefined;
  } catch {
    return undefined;
  }
}

/** Codes of the errors only the HTTP layer has. */
export type HttpErrorCode =
  | 'not_found'
  | 'method_not_allowed'
  | 'account_not_found'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'invalid_token'
  | 'internal_error'
  | 'bad_request'
  | 'request_timeout'
  | 'header_too_large'
  | 'store_unavailable'
  | 'write_conflict'
  | 'catching_up'
  | 'too_many_streams'
  | 'scope_denied'
  | 'change_dropped';

const TITLES: Readonly<Record<string, string>> = {
  not_found: 'Not found',
  method_not_allowed: 'Method not allowed',
  account_not_found: 'The account has no entry',
  payload_too_large: 'Body too large',
  unsupported_media_type: 'Body is not JSON',
  invalid_token: 'Invalid operator token',
  internal_error: 'Internal error',
  invalid_request: 'Invalid request',
  invalid_credentials: 'Invalid credentials',
  key_revoked: 'Throttle key revoked',
  invalid_account: 'Invalid account',
  invalid_amount: 'Invalid amount',
  invalid_json: 'Invalid JSON',
  window_not_found: 'The account has no window of its own',
  bad_request: 'Malformed request',
  request_timeout: 'Request not received in time',
  header_too_large: 'Request head too large',
  store_unavailable: 'Event log out of reach',
  write_conflict: 'Write conflict',
  scope_denied: "Outside the operator's scopes",
  chain_bound_exceeded: 'Past the chain bounds',
  change_not_found: 'No such pending change',
  change_dropped: 'The change no longer applies',
  change_loosens_nothing: 'The change loosens nothing',
  invalid_change: 'Invalid change',
  invalid_change_id: 'Invalid change id',
};

/** Event errors that say the request conflicts with the state rather than being malformed. */
export const CONFLICTS = new Set([
  'height_not_above_tip',
  'height_not_below_tip',
  'reorg_too_deep',
  'height_ahead_of_tip',
  'duplicate_withdrawal',
  'unknown_withdrawal',
  'duplicate_key',
  'unknown_key',
  'chain_bound_exceeded',
]);

const JSON_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' } as const;

/** A JSON answer that no cache keeps. */
export function json(status: number, value: unknown): HttpResponse {
  return { status, headers: JSON_HEADERS, body: encodeJson(value) };
}

/** An RFC 9457 problem response. */
export function problem(
  status: number,
  code: string,
  detail: string,
  extra: {
    readonly path?: string | undefined;
    readonly headers?: Readonly<Record<string, string>>;
  } = {},
): HttpResponse {
  const body: Record<string, unknown> = {
    type: `urn:peg-limits:problem:${code}`,
    title: TITLES[code] ?? code.replace(/_/g, ' '),
    status,
    detail,
    code,
    // What clients written for Emily's `ErrorResponse { message }` read.
    message: detail,
  };
  if (extra.path !== undefined) body.path = extra.path;
  return {
    status,
    headers: {
      'content-type': 'application/problem+json',
      'cache-control': 'no-store',
      ...extra.headers,
    },
    body: encodeJson(body),
  };
}

/** 403 `scope_denied`: the operator does not hold a scope the request needs (`message` says which). */
export function scopeDenied(message: string, path?: string): HttpResponse {
  return problem(403, 'scope_denied', message, { path });
}

/** A LimitsError as a problem answer, its path kept. */
export function fromError(status: number, error: LimitsError): HttpResponse {
  return problem(status, error.code, detailOf(error), { path: error.path });
}

/** What a problem says of an error: where and what, in a JSON client's words. */
export function detailOf(error: LimitsError): string {
  return inJsonWords(located(error));
}

/**
 * A library message in the words of a JSON client: amounts as JSON numbers (`-5`, not
 * `-5n`), and types as JSON names them (an integer, not a bigint).
 */
function inJsonWords(message: string): string {
  return message
    .replace(/(^|[^\w."])(-?\d+)n\b/g, '$1$2')
    .replace(/ \(bigint\)/g, '')
    .replace(/\ba bigint\b/g, 'an integer')
    .replace(/\bthe number (-?[\d.e+-]+)/g, '$1');
}

/** A request header's value by its lower-case name (names in any case; repeats joined). */
export function headerValue(headers: HttpRequest['headers'], name: string): string | undefined {
  if (headers === undefined) return undefined;
  for (const key of Object.keys(headers)) {
    if (key.toLowerCase() !== name) continue;
    const value = headers[key];
    return typeof value === 'string' ? value : value?.join(', ');
  }
  return undefined;
}

/** A request header's value, by name in any case. */
export function header(request: HttpRequest, name: string): string | undefined {
  return headerValue(request.headers, name);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * The 415 for a body not said to be JSON (or plain text, where `text` allows it), or
 * undefined when it is.
 */
export function notJson(request: HttpRequest, text = false): HttpResponse | undefined {
  const type = header(request, 'content-type')?.split(';')[0]?.trim().toLowerCase();
  if (type === 'application/json' || (text && type === 'text/plain')) return undefined;
  return problem(
    415,
    'unsupported_media_type',
    `expected Content-Type: application/json${text ? ' or text/plain' : ''}, got ${type ?? 'none'}`,
  );
}

/** The body as text, if it is at most `max` bytes of UTF-8 (413, 400 otherwise). */
export function readText(
  request: HttpRequest,
  max: number,
): { ok: true; text: string } | { ok: false; response: HttpResponse } {
  const body = request.body ?? '';
  const size =
    typeof body === 'string'
      ? body.length > max
        ? max + 1
        : encoder.encode(body).length
      : body.length;
  if (size > max)
    return {
      ok: false,
      response: problem(413, 'payload_too_large', `the body must be at most ${max} bytes`),
    };
  try {
    return { ok: true, text: typeof body === 'string' ? body : decoder.decode(body) };
  } catch {
    return { ok: false, response: problem(400, 'invalid_request', 'the body is not UTF-8') };
  }
}

/** Reads a JSON body: checks its media type and size, decodes it exactly. */
export function readJson(
  request: HttpRequest,
  max: number,
): { ok: true; value: unknown } | { ok: false; response: HttpResponse } {
  const refused = notJson(request);
  if (refused !== undefined) return { ok: false, response: refused };
  const read = readText(request, max);
  if (!read.ok) return read;
  const parsed = tryDecodeJson(read.text);
  if (!parsed.ok)
    return { ok: false, response: problem(400, 'invalid_request', parsed.error.message) };
  return { ok: true, value: parsed.value };
}

/** 405: the resource answers the methods of `allow` only (its `Allow` header). */
export function notAllowed(allow: string): HttpResponse {
  return problem(405, 'method_not_allowed', `this resource answers ${allow} only`, {
    headers: { allow },
  });
}
