/**
 * The OpenAPI document's windows as data for charts: `GET /window` and `GET /mint-window`
 * (globally, and an account's own), their paths and their schemas. Pure data.
 */
import {
  accountParameter,
  IF_NONE_MATCH,
  NOT_MODIFIED,
  preflight,
  problem,
} from './openapi-parts.js';

const int64 = { type: ['integer', 'null'], format: 'int64' } as const;

const WINDOW = {
  HeightSum: {
    type: 'object',
    additionalProperties: false,
    required: ['height', 'amount'],
    properties: { height: { type: 'integer', minimum: 0 }, amount: int64 },
  },
  Window: {
    type: 'object',
    additionalProperties: false,
    required: [
      'account',
      'tip',
      'rollingWithdrawalBlocks',
      'rollingWithdrawalCap',
      'rollingWithdrawalCapFixed',
      'rollingWithdrawalCapShare',
      'pegCapFixed',
      'peggedTotal',
      'shareBasis',
      'from',
      'to',
      'withdrawn',
      'complete',
      'completeAt',
      'heldFrom',
      'availableToWithdraw',
      'sums',
      'nextRelease',
      'throttleModeInitiator',
    ],
    properties: {
      account: { type: ['string', 'null'], description: 'null for the global window.' },
      tip: { type: ['integer', 'null'], description: 'null before any block is known.' },
      rollingWithdrawalBlocks: {
        ...int64,
        description: 'The window in blocks (throttle included).',
      },
      rollingWithdrawalCap: { ...int64, description: 'The window cap (throttle included).' },
      from: { type: ['integer', 'null'], description: "The window's first height." },
      to: { type: ['integer', 'null'], description: "The window's last height (the tip)." },
      withdrawn: {
        ...int64,
        description: 'Withdrawn in the window; rejected ones do not count.',
      },
      complete: {
        type: 'boolean',
        description:
          'Whether every height of the window is known: false while it reaches below the height from which the history is complete (a feed that started mid-chain), and while blocks are held past the chain bounds.',
      },
      rollingWithdrawalCapFixed: {
        ...int64,
        description: 'The fixed cap beneath the share (throttle overlay included).',
      },
      rollingWithdrawalCapShare: {
        ...int64,
        description:
          'The cap as a share of the pegged total, in basis points (1 to 10,000); null when none is set.',
      },
      pegCapFixed: {
        ...int64,
        description:
          "The configured peg cap (the global one, or the account entry's): GET /limits reports the one in force, which a mint window lowers to the pegged total plus its room.",
      },
      peggedTotal: {
        type: 'integer',
        format: 'int64',
        description:
          "The pegged total the share is of: the global one, or the account's for its own window (0 before any is observed: then the share allows nothing).",
      },
      shareBasis: {
        type: 'integer',
        format: 'int64',
        description:
          'The total the share applies to: the lowest of that pegged total in force during the window (a fall counts at once, a rise once the lower totals have left the window).',
      },
      completeAt: {
        type: ['integer', 'null'],
        description:
          'The tip at which an incomplete window becomes complete; null when complete, or while blocks are held (not known until the hold ends).',
      },
      heldFrom: {
        type: ['integer', 'null'],
        description:
          'The burn height of the first block a Stacks feed holds past the chain bounds; null when none is held. While one is, no room is reported.',
      },
      availableToWithdraw: {
        ...int64,
        description: 'The cap less what is withdrawn; null without a window, or while incomplete.',
      },
      sums: {
        type: 'array',
        description: 'The non-zero per-block sums in the window, oldest first.',
        items: { $ref: '#/components/schemas/HeightSum' },
      },
      nextRelease: {
        description: 'The oldest block with a sum, and the tip at which it leaves the window.',
        oneOf: [{ type: 'null' }, { $ref: '#/components/schemas/HeightSum' }],
      },
      throttleModeInitiator: { type: ['string', 'null'] },
    },
  },
} as const;

/**
 * The mint window's schema: the window's, `availableToMint` in place of `availableToWithdraw`
 * (the same shape, so that a chart reads both alike).
 */
function mintWindowSchema(window: (typeof WINDOW)['Window']) {
  const { availableToWithdraw: _room, ...properties } = window.properties;
  return {
    ...window,
    required: window.required.map((f) => (f === 'availableToWithdraw' ? 'availableToMint' : f)),
    properties: {
      ...properties,
      rollingWithdrawalBlocks: { ...int64, description: 'The mint window in blocks.' },
      rollingWithdrawalCap: {
        ...int64,
        description: 'The mint window cap in force (0 while the limits fail closed).',
      },
      withdrawn: { ...int64, description: 'Minted in the mint window.' },
      availableToMint: {
        ...int64,
        description:
          'The cap less what is minted; null without a mint window, or while it is incomplete; 0 while the limits fail closed.',
      },
    },
  };
}

/** The schemas of the windows: `HeightSum`, `Window` and `MintWindow`. */
export const WINDOW_SCHEMAS = { ...WINDOW, MintWindow: mintWindowSchema(WINDOW.Window) };

/** The paths of the windows, global and an account's own, of withdrawals and of mints. */
export const WINDOW_PATHS = {
  '/window': {
    get: {
      operationId: 'getWindow',
      summary: 'The global rolling window as data for charts',
      parameters: [IF_NONE_MATCH],
      responses: {
        ...NOT_MODIFIED,
        '200': {
          description:
            'The tip, the window, its non-zero per-block sums, the cap and what is left.',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Window' } } },
        },
      },
    },
    ...preflight,
  },
  '/window/{account}': {
    get: {
      operationId: 'getAccountWindow',
      summary: "An account's own rolling window (its entry's), counting only its withdrawals",
      parameters: [accountParameter, IF_NONE_MATCH],
      responses: {
        ...NOT_MODIFIED,
        '200': {
          description: "The account's own window.",
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Window' } } },
        },
        '400': problem('The account name is malformed (invalid_account).'),
        '404': problem(
          'The account has no window of its own: the global window applies (window_not_found).',
        ),
      },
    },
    ...preflight,
  },
  '/mint-window': {
    get: {
      operationId: 'getMintWindow',
      summary: 'The global mint window as data for charts (the rolling window of mints)',
      description:
        "GET /window's twin over the mints: the same fields, rollingWithdrawal* the mint window's, withdrawn what is minted in it, and availableToMint in place of availableToWithdraw.",
      parameters: [IF_NONE_MATCH],
      responses: {
        ...NOT_MODIFIED,
        '200': {
          description:
            'The tip, the mint window, its non-zero per-block mints, the cap and what is left.',
          content: {
            'application/json': { schema: { $ref: '#/components/schemas/MintWindow' } },
          },
        },
      },
    },
    ...preflight,
  },
  '/mint-window/{account}': {
    get: {
      operationId: 'getAccountMintWindow',
      summary: "An account's own mint window (its entry's), counting only its mints",
      parameters: [accountParameter, IF_NONE_MATCH],
      responses: {
        ...NOT_MODIFIED,
        '200': {
          description: "The account's own mint window.",
          content: {
            'application/json': { schema: { $ref: '#/components/schemas/MintWindow' } },
          },
        },
        '400': problem('The account name is malformed (invalid_account).'),
        '404': problem(
          'The account has no mint window of its own: the global one applies (window_not_found).',
        ),
      },
    },
    ...preflight,
  },
};
