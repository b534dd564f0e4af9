/**
 * The routes a Stacks feed adds to the service's own port, which the server registers
 * (`ServiceOptions.routes`): `POST /new_block`, where Emily's sidecar forwards a node's
 * blocks (scope chain: the same feed as the observer's port, written as the operator who
 * posted it), and `/admin/held`, the blocks held past the chain bounds (chain and limits:
 * listed, released, the first dropped). Without a feed they answer 404, saying what serves
 * them. Node-only.
 */
import type { HttpResponse, Operator, Readiness, Scope } from 'peg-limits';
import {
  batchAnswer,
  holds,
  MAX_BLOCK_BODY,
  problem,
  type Route,
  readText,
  refusalDetail,
  refusalStatus,
  scopeDenied,
} from '../../internal.js';
import type { HeldOp, HeldOutcome } from './feed-parts.js';
import { blockAnswer, bodyNotJson, okJson, type StacksObserver } from './observer.js';
import { blockPayloadOf } from './posted-block.js';

/** Where the routes find the feed: off, not open yet, or open. */
interface FeedSource {
  /** Whether the server has a Stacks observer at all (`--stacks-observer`). */
  readonly configured: boolean;
  /** The observer, once it is open. */
  readonly observer: () => StacksObserver | undefined;
}

// What the caller lacks: `what` needs the `needed` scopes.
function lacks(what: string, needed: ReadonlyArray<Scope>, caller: Operator): HttpResponse {
  return scopeDenied(
    `${what} ${needed.length > 1 ? 'both the chain and the limits scopes' : `the ${needed[0]} scope`}; the operator ${JSON.stringify(caller.name)} holds ${caller.scopes.join(', ')}`,
  );
}

// The feed, or the answer without one: 404 when the server has none, 503 while it opens.
function feedOf(source: FeedSource, absent: string): StacksObserver | HttpResponse {
  const observer = source.observer();
  if (observer !== undefined) return observer;
  return source.configured
    ? problem(503, 'store_unavailable', 'the Stacks observer is not open yet')
    : problem(404, 'not_found', absent);
}

/** What an operator is answered on the held blocks. */
function heldAnswer(outcome: HeldOutcome): HttpResponse {
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

const NO_HELD =
  'no held blocks here: only the Stacks observer of `peg-limits serve --stacks-observer` holds blocks';

function heldRoute(
  method: Route['method'],
  pattern: string,
  op: HeldOp,
  source: FeedSource,
): Route {
  return {
    method,
    pattern,
    access: 'operator',
    maxBody: 0,
    async serve(_request, operator) {
      const caller = operator!;
      if (!holds(caller, ['chain', 'limits']))
        return lacks('the held blocks need', ['chain', 'limits'], caller);
      const feed = feedOf(source, NO_HELD);
      return 'status' in feed ? feed : heldAnswer(await feed.heldBlocks(op, caller));
    },
  };
}

/** The feed's routes on the service's port. */
export function feedRoutes(source: FeedSource): ReadonlyArray<Route> {
  return [
    {
      method: 'POST',
      pattern: '/new_block',
      access: 'operator',
      maxBody: MAX_BLOCK_BODY,
      async serve(request, operator) {
        const caller = operator!;
        if (!holds(caller, ['chain'])) return lacks('a block needs', ['chain'], caller);
        const text = readText(request, MAX_BLOCK_BODY);
        if (!text.ok) return text.response;
        const read = blockPayloadOf(text.text);
        if (!read.ok) return bodyNotJson(read.reason);
        const feed = feedOf(
          source,
          'no Stacks feed here: `peg-limits serve --stacks-observer` takes blocks',
        );
        return 'status' in feed
          ? feed
          : blockAnswer(await feed.take(read.payload, caller, request.remote));
      },
    },
    heldRoute('GET', '/admin/held', 'list', source),
    heldRoute('POST', '/admin/held/release', 'release', source),
    heldRoute('DELETE', '/admin/held', 'drop', source),
  ];
}

/**
 * What `GET /readyz` adds while blocks are held: how many, and that the tip does not move
 * until an operator releases or drops them; nothing while none is.
 */
export function heldNotes(readiness: Readiness, held: number): Readiness {
  if (!readiness.ready || held === 0) return readiness;
  return {
    ready: true,
    notes: {
      heldBlocks: held,
      detail: `the Stacks observer holds ${held} block(s) past the chain bounds: the tip does not move until an operator releases or drops them (GET /admin/held)`,
    },
  };
}
