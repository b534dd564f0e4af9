/**
 * The OpenAPI 3.1 description of the service: the three endpoints of the interface, the
 * checks, the windows, the dashboard, the operator endpoint and this document. Served at `GET /openapi.json` and shipped as
 * `peg-limits/openapi.json`.
 */

import { EMILY_PATHS, SET_ACCOUNT_LIMITS, SET_LIMITS } from './openapi-emily.js';
import {
  accountParameter,
  IF_NONE_MATCH,
  NOT_MODIFIED,
  OPERATOR,
  preflight,
  problem,
} from './openapi-parts.js';
import { SCHEMAS } from './openapi-schemas.js';
import { WINDOW_PATHS, WINDOW_SCHEMAS } from './openapi-windows.js';

const amountParameter = {
  name: 'amount',
  in: 'path',
  required: true,
  description: 'The amount in the smallest unit: an integer from 1 to 2^63−1, in decimal digits.',
  schema: { type: 'string', pattern: '^[0-9]{1,19}$' },
} as const;

const changeIdParameter = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'The id of a pending change: a positive integer.',
  schema: { type: 'string', pattern: '^[1-9][0-9]{0,15}$' },
} as const;

function check(kind: 'withdrawal' | 'deposit') {
  return {
    get: {
      operationId: kind === 'withdrawal' ? 'checkWithdrawal' : 'checkDeposit',
      summary: `Would this ${kind} be admitted now?`,
      parameters: [accountParameter, amountParameter, IF_NONE_MATCH],
      responses: {
        ...NOT_MODIFIED,
        '200': {
          description:
            kind === 'withdrawal'
              ? 'The verdict; a refusal by a window cap says when it would pass (availableAt).'
              : 'The verdict (availableAt is always null for deposits).',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Check' } } },
        },
        '400': problem('The account or the amount is malformed (invalid_account, invalid_amount).'),
      },
    },
    ...preflight,
  };
}

// What GET /admin/held answers.
const HELD_BLOCKS = {
  type: 'object',
  required: ['blocks'],
  properties: {
    blocks: {
      type: 'array',
      items: {
        type: 'object',
        required: ['hash', 'height', 'burnHeight', 'reason', 'at'],
        properties: {
          hash: { type: 'string', description: 'index_block_hash' },
          height: { type: 'integer', description: 'The Stacks height.' },
          burnHeight: { type: 'integer', description: 'The Bitcoin height it was mined in.' },
          reason: { type: 'string', description: 'Why it is held.' },
          at: { type: 'string', format: 'date-time' },
        },
      },
    },
  },
} as const;

/** The OpenAPI 3.1 document of the service. */
export const openApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'peg-limits',
    version: '1',
    description:
      'Limits of a token pegged one-to-one to a base currency: global and per-account caps, a rolling withdrawal window in blocks, and throttle mode. Amounts are int64 integers in the smallest unit, written as plain JSON numbers with every digit. Every answer of `peg-limits serve` carries `Peg-Limits-Position`, the log position it reflects; a request with `Peg-Limits-Min-Position: n` is answered once the replica shows position n, or after 2 s with 503 `catching_up` (400 `bad_request` when n is not a non-negative integer).',
  },
  paths: {
    '/': {
      get: {
        operationId: 'getDashboard',
        summary: 'The operator dashboard: one self-contained HTML page',
        responses: {
          '200': { description: 'The page.', content: { 'text/html; charset=utf-8': {} } },
        },
      },
      ...preflight,
    },
    '/limits': {
      get: {
        operationId: 'getLimits',
        summary: 'The global limits, with every account entry',
        parameters: [IF_NONE_MATCH],
        responses: {
          ...NOT_MODIFIED,
          '200': {
            description: 'The global limits; every field is present, null where unset.',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Limits' } } },
          },
        },
      },
      post: SET_LIMITS,
      ...preflight,
    },
    '/limits/{account}/withdrawals/{amount}': check('withdrawal'),
    '/limits/{account}/deposits/{amount}': check('deposit'),
    ...WINDOW_PATHS,
    '/integrity': {
      get: {
        operationId: 'getPegIntegrity',
        summary: "The check of the peg's backing: the reserves, what is unbacked, the breaker",
        description:
          'Every cap of GET /limits reads 0 while the breaker is tripped or the reserves are unknown (the check on): then no withdrawal or deposit is admitted.',
        parameters: [IF_NONE_MATCH],
        responses: {
          ...NOT_MODIFIED,
          '200': {
            description: 'What the check sees: its state, the figures, where the breaker tripped.',
            content: {
              'application/json': { schema: { $ref: '#/components/schemas/PegIntegrity' } },
            },
          },
        },
      },
      ...preflight,
    },
    '/limits/{account}': {
      get: {
        operationId: 'getAccountLimits',
        summary: "One account's entry",
        parameters: [accountParameter, IF_NONE_MATCH],
        responses: {
          ...NOT_MODIFIED,
          '201': {
            description:
              "The account's entry. A null per-deposit or per-withdrawal cap means the global one applies.",
            content: {
              'application/json': { schema: { $ref: '#/components/schemas/AccountLimits' } },
            },
          },
          '400': problem('The account name is malformed (invalid_account).'),
          '404': problem('The account has no entry: the global limits apply (account_not_found).'),
        },
      },
      post: SET_ACCOUNT_LIMITS,
      ...preflight,
    },
    '/start_throttle': {
      post: {
        operationId: 'startThrottle',
        summary: 'Try to turn throttle mode on with a throttle key',
        requestBody: {
          required: true,
          content: {
            'application/json': { schema: { $ref: '#/components/schemas/ThrottleRequest' } },
          },
        },
        responses: {
          '200': {
            description: 'Throttle mode is on; the limits after the attempt.',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Limits' } } },
          },
          '400': problem(
            'Not JSON, or name or secret missing, empty, not a string or too long (invalid_request).',
          ),
          '401': problem('Unknown key name or wrong secret (invalid_credentials).'),
          '403': problem('The key is revoked (key_revoked).'),
          '413': problem('The body is over 16 KiB (payload_too_large).'),
          '415': problem('The body is not application/json (unsupported_media_type).'),
        },
      },
      ...preflight,
    },
    ...EMILY_PATHS,
    '/admin/events': {
      post: {
        operationId: 'postEvents',
        summary: 'Apply operator events, all or nothing',
        description:
          'Each event needs a scope of the operator: chain (blocks, reorganizations, withdrawals, pegged totals), limits (caps, entries, throttle mode), keys (throttle keys). A block more than maxTipAdvance above the tip, or a reorganization more than maxReorgDepth below it, is refused unless an operator holding chain and limits sends Peg-Limits-Override: chain-bounds. Where loosening waits, a batch that loosens the limits becomes a pending change (202). Answers 404 when the service has no operator configured.',
        parameters: [
          {
            name: 'Peg-Limits-Override',
            in: 'header',
            required: false,
            description:
              '`chain-bounds`: lift the chain bounds for this batch (chain and limits scopes).',
            schema: { type: 'string', enum: ['chain-bounds'] },
          },
        ],
        security: OPERATOR,
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                oneOf: [
                  { $ref: '#/components/schemas/Event' },
                  { type: 'array', items: { $ref: '#/components/schemas/Event' } },
                ],
              },
            },
          },
        },
        responses: {
          '200': {
            description: 'Every event was applied (and journaled); the limits after them.',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Limits' } } },
          },
          '202': {
            description:
              'The batch loosens the limits and waits as a pending change (nothing of it applies yet).',
            content: {
              'application/json': { schema: { $ref: '#/components/schemas/PendingChange' } },
            },
          },
          '400': problem(
            'An event is malformed, a malformed Authorization header (bad_request), or a loosening mixed with events a change cannot hold (invalid_change); nothing was applied.',
          ),
          '401': problem('Missing or unknown bearer token (invalid_token).'),
          '403': problem(
            "An event outside the operator's scopes, or the override from an operator without chain and limits (scope_denied, with the event's path); nothing was applied.",
          ),
          '404': problem('No operator is configured (not_found).'),
          '409': problem(
            'An event conflicts with the state (a height, a duplicate, an unknown id), or goes past the chain bounds (chain_bound_exceeded); nothing was applied.',
          ),
          '413': problem('The body is over 1 MiB (payload_too_large).'),
          '415': problem('The body is not application/json (unsupported_media_type).'),
        },
      },
    },
    '/admin/changes': {
      get: {
        operationId: 'getChanges',
        summary: 'The pending changes (any operator)',
        security: OPERATOR,
        responses: {
          '200': {
            description: 'The pending changes, oldest first.',
            content: {
              'application/json': { schema: { $ref: '#/components/schemas/PendingChanges' } },
            },
          },
          '400': problem('A malformed Authorization header (bad_request).'),
          '401': problem('Missing or unknown bearer token (invalid_token).'),
          '404': problem('No operator is configured (not_found).'),
        },
      },
    },
    '/admin/audit': {
      get: {
        operationId: 'getAudit',
        summary: 'The audit trail: the records of accepted batches, in order (any operator)',
        description:
          'Each record: position, at, actor ({ kind: operator | throttleKey | system, name }), requestId, remote, the events (int64 exact), settled (pending changes applied, dropped or cancelled inside the batch, by the system), and hash: the SHA-256 of the previous hash, a newline, and the record up to its hash. `peg-limits audit verify` checks the chain.',
        security: OPERATOR,
        parameters: [
          {
            name: 'after',
            in: 'query',
            required: false,
            description: 'The records after this position (default 0: from the first).',
            schema: { type: 'integer', minimum: 0 },
          },
          {
            name: 'limit',
            in: 'query',
            required: false,
            description: 'At most this many (default 1,000, at most 10,000).',
            schema: { type: 'integer', minimum: 0, maximum: 10_000 },
          },
        ],
        responses: {
          '200': {
            description: 'The records, in order.',
            content: {
              'application/json': { schema: { $ref: '#/components/schemas/AuditRecords' } },
            },
          },
          '400': problem(
            'after or limit is not a non-negative integer, or limit is over 10,000 (bad_request).',
          ),
          '401': problem('Missing or unknown bearer token (invalid_token).'),
          '404': problem('No operator is configured, or the service keeps no trail (not_found).'),
        },
      },
    },
    '/admin/changes/{id}/approve': {
      post: {
        operationId: 'approveChange',
        summary: "Approve a pending change (an operator holding its events' scopes)",
        description:
          'Approving twice changes nothing. The approval that reaches the quorum applies the change at once.',
        security: OPERATOR,
        parameters: [changeIdParameter],
        responses: {
          '200': {
            description: 'The change with the approval, or, once it applied, the limits after it.',
            content: {
              'application/json': { schema: { $ref: '#/components/schemas/Approval' } },
            },
          },
          '400': problem('A malformed change id (invalid_change_id) or Authorization header.'),
          '401': problem('Missing or unknown bearer token (invalid_token).'),
          '403': problem("The operator does not hold the change's scopes (scope_denied)."),
          '404': problem(
            'No such pending change: never proposed, applied, dropped or cancelled (change_not_found).',
          ),
          '409': problem(
            'The quorum was reached but the change no longer applies: it was dropped (change_dropped).',
          ),
        },
      },
    },
    '/admin/changes/{id}': {
      delete: {
        operationId: 'cancelChange',
        summary: "Cancel a pending change (an operator holding its events' scopes)",
        security: OPERATOR,
        parameters: [changeIdParameter],
        responses: {
          '200': {
            description: 'The change that was cancelled; it never applies.',
            content: {
              'application/json': { schema: { $ref: '#/components/schemas/PendingChange' } },
            },
          },
          '400': problem('A malformed change id (invalid_change_id) or Authorization header.'),
          '401': problem('Missing or unknown bearer token (invalid_token).'),
          '403': problem("The operator does not hold the change's scopes (scope_denied)."),
          '404': problem('No such pending change (change_not_found).'),
        },
      },
    },
    '/events': {
      get: {
        operationId: 'getEvents',
        summary: 'A stream of changes (Server-Sent Events, `peg-limits serve`)',
        description:
          'On connecting and after every change, an event `limits` whose data is the GET /limits body and whose id is the log position; `throttleStarted` / `throttleEnded` events with data `{ initiator, position }`; a comment every 15 s.',
        responses: {
          '200': { description: 'The stream.', content: { 'text/event-stream': {} } },
          '503': {
            description: '`too_many_streams`: at the cap (`--max-streams`).',
            content: {
              'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } },
            },
          },
        },
      },
      ...preflight,
    },
    '/healthz': {
      get: {
        operationId: 'getHealth',
        summary: 'Whether the process serves (no credentials, no CORS)',
        responses: {
          '200': {
            description: 'It serves.',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['status'],
                  properties: { status: { const: 'ok' } },
                },
              },
            },
          },
        },
      },
    },
    '/readyz': {
      get: {
        operationId: 'getReadiness',
        summary: 'Whether the state is loaded and changes can be written (no credentials, no CORS)',
        responses: {
          '200': {
            description: 'Ready.',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['status'],
                  properties: { status: { const: 'ready' } },
                },
              },
            },
          },
          '503': {
            description:
              'Not ready: `store_unavailable` (the log takes no writes) or `catching_up`.',
            content: {
              'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } },
            },
          },
        },
      },
    },
    '/metrics': {
      get: {
        operationId: 'getMetrics',
        summary: 'Prometheus metrics (`peg-limits serve`, unless --no-metrics; no CORS)',
        responses: {
          '200': {
            description: 'The Prometheus text format, version 0.0.4.',
            content: { 'text/plain': {} },
          },
          '404': {
            description: 'No metrics here (a service without the server, or metrics off).',
            content: {
              'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } },
            },
          },
        },
      },
    },
    '/admin/held': {
      get: {
        operationId: 'getHeldBlocks',
        summary: 'The blocks the Stacks observer holds past the chain bounds (chain and limits)',
        security: OPERATOR,
        responses: {
          '200': {
            description: 'The held blocks, oldest first.',
            content: { 'application/json': { schema: HELD_BLOCKS } },
          },
          '401': problem('Missing or unknown bearer token (invalid_token).'),
          '403': problem('The operator lacks the chain or the limits scope (scope_denied).'),
          '404': problem('No operator is configured, or no Stacks observer (not_found).'),
        },
      },
      delete: {
        operationId: 'dropHeldBlock',
        summary:
          'Drops the first held block (the one the bounds refused); the blocks behind it are taken again (chain and limits)',
        security: OPERATOR,
        responses: {
          '200': {
            description: 'What was dropped, applied and is still held.',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['dropped', 'applied', 'held'],
                  properties: {
                    dropped: { type: 'integer', minimum: 0 },
                    applied: { type: 'integer', minimum: 0 },
                    held: { type: 'integer', minimum: 0 },
                  },
                },
              },
            },
          },
          '401': problem('Missing or unknown bearer token (invalid_token).'),
          '403': problem('The operator lacks the chain or the limits scope (scope_denied).'),
          '404': problem('No operator is configured, or no Stacks observer (not_found).'),
        },
      },
    },
    '/admin/held/release': {
      post: {
        operationId: 'releaseHeldBlocks',
        summary:
          'Applies the held blocks in order, each as a batch of the operator with the override (chain and limits)',
        security: OPERATOR,
        responses: {
          '200': {
            description: 'How many were released, and the tip after them.',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['released', 'tip'],
                  properties: {
                    released: { type: 'integer', minimum: 0 },
                    tip: { type: ['integer', 'null'] },
                  },
                },
              },
            },
          },
          '401': problem('Missing or unknown bearer token (invalid_token).'),
          '403': problem('The operator lacks the chain or the limits scope (scope_denied).'),
          '404': problem('No operator is configured, or no Stacks observer (not_found).'),
          '409': problem('A held block did not apply (release_stopped): the rest stay held.'),
          '503': problem('The store is unavailable (store_unavailable).'),
        },
      },
    },
    '/openapi.json': {
      get: {
        operationId: 'getOpenApi',
        summary: 'This document',
        responses: {
          '200': { description: 'The OpenAPI document.', content: { 'application/json': {} } },
        },
      },
      ...preflight,
    },
  },
  components: {
    securitySchemes: {
      operatorToken: {
        type: 'http',
        scheme: 'bearer',
        description: 'An operator token (`peg-limits token`), as `Authorization: Bearer <token>`.',
      },
      apiKey: {
        type: 'apiKey',
        in: 'header',
        name: 'x-api-key',
        description:
          "The same operator token in Emily's `ApiGatewayKey` header: the same operators, the same scopes. Sent with Authorization, both must carry the same token.",
      },
    },
    schemas: { ...SCHEMAS, ...WINDOW_SCHEMAS },
  },
} as const;
