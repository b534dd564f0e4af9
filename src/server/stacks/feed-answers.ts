/**
 * The feed's outcomes in HTTP, for its listeners (the observer's port and the service's own
 * routes): what a node is answered for a block (200 once it is durable: applied, held,
 * known, skipped), what an operator is answered on the held blocks, and the port's refusals
 * as the service answers them. Nothing below the listeners speaks HTTP. Node-only.
 */
import type { HttpResponse } from 'peg-limits';
import { batchAnswer, problem, refusalDetail, refusalStatus } from '../../internal.js';
import type { BlockOutcome, HeldOutcome } from './feed-parts.js';

/** A 200 answer with a JSON body. */
export function okJson(body: Readonly<Record<string, unknown>>): HttpResponse {
  return {
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  };
}

/** What a node (or an operator who posted a block) is answered for a block. */
export function blockAnswer(outcome: BlockOutcome): HttpResponse {
  switch (outcome.kind) {
    case 'known':
      return okJson(
        outcome.held ? { ok: true, known: true, held: true } : { ok: true, known: true },
      );
    case 'skipped':
      return okJson({ ok: true, skipped: outcome.reason });
    case 'applied':
      return okJson({ ok: true, events: outcome.events });
    case 'held':
      return okJson({ ok: true, held: true });
    case 'confirmed':
      return okJson({ ok: true, confirmed: true });
    case 'refused':
      return batchAnswer(outcome.outcome);
  }
}

/** What an operator is answered on the held blocks. */
export function heldAnswer(outcome: HeldOutcome): HttpResponse {
  switch (outcome.kind) {
    case 'listed':
      return {
        status: 200,
        headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
        body: JSON.stringify({ blocks: outcome.blocks }),
      };
    case 'released':
      return okJson({ released: outcome.released, tip: outcome.tip });
    case 'dropped':
      return okJson({ dropped: outcome.dropped, applied: outcome.applied, held: outcome.held });
    case 'stopped':
      return problem(
        refusalStatus(outcome.outcome.error),
        'release_stopped',
        `block ${outcome.block} did not apply (${outcome.released} released before it): ${refusalDetail(outcome.outcome)}`,
      );
    case 'refused':
      return batchAnswer(outcome.outcome);
  }
}

/** A posted body that is not JSON: 400 `invalid_json`, saying why. */
export function notJson(reason: string): HttpResponse {
  return problem(400, 'invalid_json', `the body is not JSON: ${reason}`);
}
