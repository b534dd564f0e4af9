/**
 * Reading a request body no further than its route takes: the rule the node:http server and
 * the Fetch adapter share, after {@link admitRequest} has said how much that is.
 * Browser-safe.
 */
import { type HttpRequest, type HttpResponse, headerValue, problem } from './handler.js';

/** The 413 for a body over `max` bytes. */
export function payloadTooLarge(max: number): HttpResponse {
  return problem(413, 'payload_too_large', `the body must be at most ${max} bytes`);
}

/**
 * Whether the request says (`Content-Length`) that its body is over `max` bytes: it is then
 * answered 413 before a byte of it is read.
 */
export function declaredTooLarge(headers: HttpRequest['headers'], max: number): boolean {
  return Number(headerValue(headers, 'content-length') ?? 0) > max;
}

/** Collects a body chunk by chunk and says as soon as it passes its cap. */
interface BodyCollector {
  /** Adds a chunk; false once the body is over the cap (the chunk is not kept). */
  add(chunk: Uint8Array): boolean;
  /** The body so far, as one array. */
  bytes(): Uint8Array;
}

/**
 * A collector for a body of at most `max` bytes.
 *
 * @example
 * ```ts
 * const body = bodyCollector(4);
 * body.add(new Uint8Array(3)); // true
 * body.add(new Uint8Array(2)); // false: 5 bytes are over the cap
 * ```
 */
export function bodyCollector(max: number): BodyCollector {
  const chunks: Uint8Array[] = [];
  let size = 0;
  return {
    add(chunk) {
      size += chunk.length;
      if (size > max) return false;
      chunks.push(chunk);
      return true;
    },
    bytes() {
      if (chunks.length === 1) return chunks[0]!;
      const all = new Uint8Array(Math.min(size, max));
      let at = 0;
      for (const chunk of chunks) {
        all.set(chunk, at);
        at += chunk.length;
      }
      return all;
    },
  };
}

/**
 * Reads a body stream up to `max` bytes. Past the cap it stops reading, cancels the stream
 * and resolves with the 413, so a client cannot make it hold more than the route takes.
 */
export async function readBody(
  stream: ReadableStream<Uint8Array> | null,
  max: number,
): Promise<{ ok: true; body: Uint8Array } | { ok: false; response: HttpResponse }> {
  const body = bodyCollector(max);
  if (stream === null) return { ok: true, body: body.bytes() };
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { ok: true, body: body.bytes() };
    if (!body.add(value)) {
      reader.cancel().catch(() => undefined);
      return { ok: false, response: payloadTooLarge(max) };
    }
  }
}
