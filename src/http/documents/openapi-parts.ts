/**
 * What the OpenAPI document's operations share: the account parameter, the operator's
 * credentials, a JSON body or answer of a schema, a problem answer and the CORS preflight.
 */

/** The account in a path. */
export const accountParameter = {
  name: 'account',
  in: 'path',
  required: true,
  description: 'The account, percent-encoded: 1 to 256 characters, no control characters.',
  schema: { type: 'string', minLength: 1 },
} as const;

/** An operator's token, in either header. */
export const OPERATOR: ReadonlyArray<Readonly<Record<string, ReadonlyArray<string>>>> = [
  { operatorToken: [] },
  { apiKey: [] },
];

/** A JSON body or answer of one of the document's schemas. */
export const json = (ref: string) => ({
  'application/json': { schema: { $ref: `#/components/schemas/${ref}` } },
});

/** A problem answer (RFC 9457), as described. */
export function problem(description: string) {
  return {
    description,
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
  };
}

/** Every public path answers a CORS preflight (POST /admin/events never does). */
export const preflight = {
  options: {
    summary: 'CORS preflight',
    responses: { '204': { description: 'Allowed methods and headers for the origin.' } },
  },
} as const;

/** The validator of a public read, sent back to ask whether it changed. */
export const IF_NONE_MATCH = {
  name: 'If-None-Match',
  in: 'header',
  required: false,
  description:
    'The ETag of an answer held: a 304 without a body when it is the current one (a list, a weak form or * match too).',
  schema: { type: 'string' },
} as const;

/** What a public read answers an If-None-Match that matches. */
export const NOT_MODIFIED = {
  '304': {
    description:
      'Not modified: the ETag given is the current one. No body; the ETag, Cache-Control and Vary as the 200 carries them.',
  },
} as const;
