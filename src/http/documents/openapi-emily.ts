/**
 * The OpenAPI document's operations of Emily's private writes: `POST /limits`,
 * `POST /limits/{account}`, `POST /throttle`, `PATCH /throttle/activate|deactivate`,
 * `POST|PUT /chainstate` and `POST /new_block`, each an operator's with either header.
 */
import { accountParameter, json, OPERATOR, problem } from './openapi-parts.js';

// What every write of Emily's may be refused with, besides its own.
function emilyRefusals(scope: string, conflicts?: string) {
  return {
    '400': problem(
      "The body is not what Emily's client sends, or a field breaks a rule (the problem names it); a malformed Authorization or x-api-key, or the two naming different tokens (bad_request). Nothing was applied.",
    ),
    '401': problem('Missing or unknown operator token (invalid_token).'),
    '403': problem(`The operator does not hold the ${scope} scope (scope_denied).`),
    '404': problem('No operator is configured (not_found).'),
    ...(conflicts === undefined ? {} : { '409': problem(conflicts) }),
    '413': problem('The body is too large (payload_too_large).'),
    '415': problem('The body is not application/json (unsupported_media_type).'),
  };
}

// A loosening that waits: Emily applies at once, this service answers 202.
const WAITS = {
  '202': {
    description:
      'The change loosens the limits and waits as a pending change (nothing of it applies yet): the one difference in kind from Emily.',
    content: json('PendingChange'),
  },
} as const;

function keyState(op: 'activate' | 'deactivate') {
  return {
    patch: {
      operationId: op === 'activate' ? 'activateThrottleKey' : 'deactivateThrottleKey',
      summary: `${op === 'activate' ? 'Reactivate' : 'Revoke'} a throttle key by its name (Emily: by its hash; scope keys)`,
      description:
        "The key's name as a JSON string (as Emily's client sends its body) or as plain text. Emily names a key by its Argon2 hash, which this service never has: it keeps a salted SHA-256 of its own.",
      security: OPERATOR,
      requestBody: {
        required: true,
        content: {
          'application/json': { schema: { type: 'string', minLength: 1 } },
          'text/plain': { schema: { type: 'string', minLength: 1 } },
        },
      },
      responses: {
        '204': { description: `The key is ${op === 'activate' ? 'active' : 'revoked'}.` },
        ...(op === 'deactivate' ? WAITS : {}),
        ...emilyRefusals('keys'),
        '404': problem('No operator is configured, or no key has that name (unknown_key).'),
        '415': problem('The body is neither application/json nor text/plain.'),
      },
    },
  };
}

function chainstate(method: 'post' | 'put') {
  return {
    operationId: method === 'post' ? 'setChainstate' : 'updateChainstate',
    summary: "Moves the tip to a Chainstate's bitcoinBlockHeight (Emily's signers; scope chain)",
    description:
      'Above the tip: a block connected; below it: a reorganization; at it: nothing. Under the chain bounds, as every chain batch.',
    security: OPERATOR,
    requestBody: { required: true, content: json('Chainstate') },
    responses: {
      '201': { description: 'The Chainstate, as sent.', content: json('Chainstate') },
      ...emilyRefusals(
        'chain',
        'Past the chain bounds (chain_bound_exceeded), or a reorganization deeper than the history (reorg_too_deep).',
      ),
    },
  };
}

/** `POST /limits`: Emily's setLimits. */
export const SET_LIMITS = {
  operationId: 'setLimits',
  summary:
    "Sets the global caps and the listed account entries (Emily's POST /limits; scope limits)",
  description:
    "Emily's Limits body. Answered 201 with the Limits after it, as Emily's handler answers. A window with blocks and no cap (or a cap and no blocks) is refused, as Emily refuses it, and so is every other rule of the caps (a minimum above its cap, a window longer than the history).",
  security: OPERATOR,
  requestBody: { required: true, content: json('LimitsInput') },
  responses: {
    '201': { description: 'The limits after the change.', content: json('Limits') },
    ...WAITS,
    ...emilyRefusals('limits'),
  },
} as const;

/** `POST /limits/{account}`: Emily's setLimitsForAccount. */
export const SET_ACCOUNT_LIMITS = {
  operationId: 'setAccountLimits',
  summary: "Replaces one account's entry (Emily's POST /limits/{account}; scope limits)",
  description: 'All fields null removes the entry.',
  security: OPERATOR,
  parameters: [accountParameter],
  requestBody: { required: true, content: json('AccountLimitsInput') },
  responses: {
    '201': {
      description: "The account's limits after the change (every field null once removed).",
      content: json('AccountLimits'),
    },
    ...WAITS,
    ...emilyRefusals('limits'),
  },
} as const;

/** The paths of Emily's writes that are only Emily's. */
export const EMILY_PATHS = {
  '/throttle': {
    post: {
      operationId: 'addThrottleKey',
      summary: "Registers a throttle key (Emily's POST /throttle; scope keys)",
      description:
        'Only a salted hash of the secret is kept. A secret must have at least 22 characters (128 bits) and at most 1,024.',
      security: OPERATOR,
      requestBody: { required: true, content: json('ThrottleKey') },
      responses: {
        '201': { description: 'The key is registered and active.' },
        ...emilyRefusals('keys', 'A key of that name is registered already (duplicate_key).'),
      },
    },
  },
  '/throttle/activate': keyState('activate'),
  '/throttle/deactivate': keyState('deactivate'),
  '/chainstate': { post: chainstate('post'), put: chainstate('put') },
  '/new_block': {
    post: {
      operationId: 'newBlock',
      summary:
        "A Stacks node's block, as Emily's sidecar forwards it (scope chain; `peg-limits serve --stacks-observer`)",
      description:
        "The node's /new_block payload, or a JSON string holding it. Taken by the same feed as the observer's port, in the same order (the start from the node's state, verified rejections, held blocks), written as the operator whose token came with it; answered 200 once the block is durable (applied, held, or skipped as unusable).",
      security: OPERATOR,
      requestBody: {
        required: true,
        content: { 'application/json': { schema: { type: ['object', 'string'] } } },
      },
      responses: {
        '200': {
          description: 'The block is taken (applied, held or skipped), durably.',
          content: { 'application/json': { schema: { type: 'object' } } },
        },
        '400': problem('The body is not JSON (invalid_json), or a malformed credential header.'),
        '401': problem('Missing or unknown operator token (invalid_token).'),
        '403': problem('The operator does not hold the chain scope (scope_denied).'),
        '404': problem('No operator is configured, or no Stacks feed (not_found).'),
        '413': problem('The body is over 64 MiB (payload_too_large).'),
        '415': problem('The body is not application/json (unsupported_media_type).'),
        '503': problem('The store is unavailable (store_unavailable).'),
      },
    },
  },
} as const;
