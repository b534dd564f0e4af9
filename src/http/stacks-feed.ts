/**
 * The hook through which a service hands a Stacks feed its requests: the blocks posted to
 * the service's own port (`POST /new_block`) and the held blocks' routes (`/admin/held`).
 * The route table marks those routes; the feed itself, and the blocks it holds, are the
 * server's (`peg-limits/server`'s Stacks observer). Browser-safe.
 */
import type { HttpResponse } from './handler.js';

/** The blocks a Stacks observer holds past the chain bounds, as a service reaches them. */
export interface HeldBlocks {
  /** How many are held (for `GET /readyz`). */
  count(): number;
  /**
   * Answers an operator holding chain and limits: `list` them, `release` them (applied in
   * order as the operator's batches), or `drop` the first; `by` names the operator and
   * `authorization` is the request's own header, which the release writes with.
   */
  handle(op: 'list' | 'release' | 'drop', by: string, authorization: string): Promise<HttpResponse>;
}

/**
 * A Stacks feed, as a service reaches it: the blocks it holds past the chain bounds
 * (`/admin/held`), and the blocks posted to the service's own port (`POST /new_block`).
 */
export interface StacksFeed extends HeldBlocks {
  /**
   * Takes one `/new_block` payload (decoded from the body, or from the JSON string the
   * body held), after every block before it, writing as the operator whose token
   * `authorization` (`Bearer <token>`) carries; `remote` is the poster's address. Resolves
   * with the answer for the poster.
   */
  newBlock(
    payload: unknown,
    authorization: string,
    remote: string | undefined,
  ): Promise<HttpResponse>;
}
