/**
 * Request ids: `Peg-Limits-Request-Id` names a request in the audit trail, so that an
 * operator's own logs and the service's record can be matched. A change without one gets
 * one made up; either way the answer carries it back. Browser-safe.
 */
import { header, problem } from './answers.js';
import type { HttpRequest, HttpResponse } from './messages.js';

const REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** The request's id as given (undefined when it gives none), or the 400 for a malformed one. */
export function givenRequestId(
  request: HttpRequest,
):
  | { readonly ok: true; readonly id: string | undefined }
  | { readonly ok: false; readonly response: HttpResponse } {
  const id = header(request, 'peg-limits-request-id');
  if (id === undefined) return { ok: true, id: undefined };
  if (isRequestId(id)) return { ok: true, id };
  return {
    ok: false,
    response: problem(
      400,
      'bad_request',
      `Peg-Limits-Request-Id takes 1 to 128 letters, digits and . _ : @ / + = -, got ${JSON.stringify(id.slice(0, 40))}`,
    ),
  };
}

/** Whether `id` is a request id: 1 to 128 letters, digits and `. _ : @ / + = -`. */
export function isRequestId(id: string): boolean {
  return REQUEST_ID.test(id);
}

/** A new request id: a random UUID. */
export function newRequestId(): string {
  return globalThis.crypto.randomUUID();
}

/** `response` with the request id it answers (a new object; the original stays as it was). */
export function withRequestId(response: HttpResponse, id: string): HttpResponse {
  return { ...response, headers: { ...response.headers, 'peg-limits-request-id': id } };
}
