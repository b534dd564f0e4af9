/** Validates actual responses against the OpenAPI document with a real JSON Schema validator. */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { expect } from 'vitest';
import { type HttpResponse, openApiDocument } from '../../src/index.js';

const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
ajv.addSchema({ $id: 'openapi', ...(openApiDocument as object) });

type Doc = {
  paths: Record<
    string,
    Record<
      string,
      { responses: Record<string, { content?: Record<string, { schema?: unknown }> }> }
    >
  >;
};

/** The routes the document has, as [path template, method]. */
export function documentedRoutes(): Array<[string, string]> {
  const doc = openApiDocument as unknown as Doc;
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.keys(ops).map((m): [string, string] => [path, m]),
  );
}

/**
 * Asserts that `response` is one the document describes for `template` and `method`: its
 * status is listed, its content type is the one listed, and its body matches the schema.
 */
export function expectDocumented(template: string, method: string, response: HttpResponse): void {
  const doc = openApiDocument as unknown as Doc;
  const op = doc.paths[template]?.[method.toLowerCase()];
  expect(op, `${method} ${template} is documented`).toBeDefined();
  const documented = op!.responses[String(response.status)];
  expect(documented, `${method} ${template} documents status ${response.status}`).toBeDefined();
  const type = response.headers['content-type']!;
  const media = documented!.content?.[type];
  expect(media, `${method} ${template} ${response.status} documents ${type}`).toBeDefined();
  if (media?.schema === undefined) return;
  const pointer = (media.schema as { $ref?: string }).$ref;
  const validate =
    pointer !== undefined
      ? ajv.getSchema(`openapi${pointer}`)!
      : ajv.compile(media.schema as object);
  // The document describes integers; a lossy parse is enough to check shapes and types.
  const ok = validate(JSON.parse(response.body));
  expect(
    validate.errors ?? [],
    `${method} ${template} ${response.status}: ${response.body}`,
  ).toEqual([]);
  expect(ok).toBe(true);
}
