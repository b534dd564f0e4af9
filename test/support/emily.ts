/**
 * Emily's private API as its generated clients read it (test/data/emily-private-api.json,
 * read from the sBTC repository's `private-emily-openapi-spec.json`, with its provenance):
 * every answer of ours on Emily's paths is checked against the schema Emily documents for
 * that path, method and status.
 */
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { expect } from 'vitest';

interface EmilyOperation {
  readonly operationId: string;
  readonly security: ReadonlyArray<string>;
  readonly responses: Readonly<Record<string, string | null>>;
}

/** The extract of Emily's private document. */
export const EMILY = JSON.parse(
  readFileSync(new URL('../data/emily-private-api.json', import.meta.url), 'utf8'),
) as {
  readonly provenance: Readonly<Record<string, string>>;
  readonly securitySchemes: Readonly<Record<string, { readonly name: string }>>;
  readonly paths: Readonly<Record<string, Readonly<Record<string, EmilyOperation>>>>;
  readonly schemas: Readonly<Record<string, object>>;
};

// Emily's schemas are OpenAPI 3.0: `nullable`, `format: int64`, `minimum: 0` for its u64s.
const ajv = new Ajv({ strict: false, allErrors: true });
ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
ajv.addSchema({ $id: 'emily', components: { schemas: EMILY.schemas } });

/** The Emily schema a status of `method path` carries (null: none), or undefined when not listed. */
export function emilySchemaOf(
  path: string,
  method: string,
  status: number,
): string | null | undefined {
  const op = EMILY.paths[path]?.[method.toLowerCase()];
  if (op === undefined) throw new Error(`Emily's private API has no ${method} ${path}`);
  return op.responses[String(status)];
}

/**
 * Asserts that an answer is one Emily's generated client reads as Emily's: a success
 * validates against the schema Emily documents for it (201 for a write Emily documents as
 * 200 takes that schema: Emily's handler answers 201, and its client takes any 2xx), an
 * error against `ErrorResponse` (`{ message }`) whatever its status. A 202 (a loosening that
 * waits) is the one answer in kind Emily does not give: the caller checks it against ours.
 */
export function expectEmily(
  path: string,
  method: string,
  response: { readonly status: number; readonly body: string },
): void {
  const { status, body } = response;
  const where = `${method} ${path} ${status}: ${body.slice(0, 300)}`;
  let schema: string | null | undefined;
  if (status >= 400) schema = 'ErrorResponse';
  else {
    schema = emilySchemaOf(path, method, status);
    if (schema === undefined && status === 201) schema = emilySchemaOf(path, method, 200);
    expect(schema, `${where}: Emily documents this success`).not.toBeUndefined();
  }
  if (schema === null) return;
  const validate = ajv.getSchema(`emily#/components/schemas/${schema}`)!;
  const ok = validate(JSON.parse(body));
  expect(validate.errors ?? [], where).toEqual([]);
  expect(ok, where).toBe(true);
}
