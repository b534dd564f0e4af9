/**
 * The 1.x names kept for the API's sake and read by nothing: the hooks through which a
 * service once handed a Stacks feed its routes. The server now registers a feed's routes
 * itself, and a feed applies its batches through `Service.applyBatch`; 2.0 removes these
 * (docs/decisions.md, "The vocabulary of 2.0"). Browser-safe.
 */
import type { HttpResponse } from './messages.js';

/**
 * The blocks a Stacks observer holds past the chain bounds, as a service once reached them.
 *
 * @deprecated Not read by any service: `peg-limits serve --stacks-observer` serves
 * `/admin/held` itself. Gone in 2.0.
 */
export interface HeldBlocks {
  /** How many are held. */
  count(): number;
  /** Answers an operator holding chain and limits: `list`, `release` or `drop`. */
  handle(op: 'list' | 'release' | 'drop', by: string, authorization: string): Promise<HttpResponse>;
}

/**
 * A Stacks feed, as a service once reached it.
 *
 * @deprecated Not read by any service: `peg-limits serve --stacks-observer` serves
 * `POST /new_block` itself, and the feed applies its batches through `Service.applyBatch`.
 * Gone in 2.0.
 */
export interface StacksFeed extends HeldBlocks {
  /** Takes one `/new_block` payload. */
  newBlock(
    payload: unknown,
    authorization: string,
    remote: string | undefined,
  ): Promise<HttpResponse>;
}
