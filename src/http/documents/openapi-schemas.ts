/**
 * The schemas of the OpenAPI document: the bodies the service answers with and takes.
 */

import { CHANGE_FIELDS } from '../../core/changes.js';
import { CAP_FIELDS, REPORTED_CAP_FIELDS } from '../../core/limits.js';
import { PEG_INTEGRITY } from './openapi-integrity.js';

const int64 = { type: ['integer', 'null'], format: 'int64' } as const;

// The share in Emily's bodies: an extension field its clients never send.
const EMILY_SHARE_INPUT = {
  ...int64,
  minimum: 1,
  maximum: 10_000,
  description:
    "This service's own: the window cap as a share of the pegged total, in basis points (the cap in force is the lower of the two). Emily's clients leave it out, which keeps the share set; null removes it.",
} as const;

// The mint window's fields in Emily's bodies: extensions its clients never send.
const EMILY_MINT_INPUT = {
  rollingMintBlocks: {
    ...int64,
    minimum: 1,
    description:
      "This service's own: the mint window's length in blocks. Left out, it stays as configured; null removes it.",
  },
  rollingMintCap: {
    ...int64,
    minimum: 0,
    description:
      "This service's own: the most that may be minted in the mint window (the configured cap). Left out, it stays; null removes it.",
  },
  rollingMintCapShare: {
    ...int64,
    minimum: 1,
    maximum: 10_000,
    description:
      "This service's own: the mint window's cap as a share of the pegged total, in basis points. Left out, it stays; null removes it.",
  },
} as const;

// The mint window's fields as the reads report them (globally, or of an entry's own window).
function mintFields(whose: string) {
  return {
    rollingMintBlocks: {
      ...int64,
      description: `Length of ${whose} mint window in blocks; null without one.`,
    },
    rollingMintCap: {
      ...int64,
      description: `Most that may be minted in ${whose} mint window: the cap in force (the lower of the fixed cap and its share of the pegged total's lagged basis; 0 while the limits fail closed).`,
    },
    rollingMintCapShare: {
      ...int64,
      description: `${whose[0]!.toUpperCase()}${whose.slice(1)} mint window cap's share of the pegged total, in basis points; null when none is set.`,
    },
  } as const;
}

const MINT_FIELD_NAMES = ['rollingMintBlocks', 'rollingMintCap', 'rollingMintCapShare'];

/** The document's `components.schemas`. */
export const SCHEMAS = {
  AccountLimits: {
    type: 'object',
    additionalProperties: false,
    required: [...REPORTED_CAP_FIELDS, 'throttleModeInitiator', ...MINT_FIELD_NAMES],
    properties: {
      pegCap: {
        ...int64,
        description:
          "The account's peg cap in force, on its own pegged-in total: as configured without a mint window of its own, else the lower of it and the account's total plus its mint window's room (0 room while unknown).",
      },
      perDepositCap: {
        ...int64,
        description: 'Cap per deposit; null means the global one applies.',
      },
      perDepositMinimum: {
        ...int64,
        description: 'Minimum per deposit; null means no minimum.',
      },
      perWithdrawalCap: {
        ...int64,
        description: 'Cap per withdrawal; null means the global one applies.',
      },
      rollingWithdrawalBlocks: {
        ...int64,
        description: "Length of the account's own window in blocks.",
      },
      rollingWithdrawalCap: {
        ...int64,
        description:
          "Most the account may withdraw in its own window: the cap in force (the lower of the fixed cap and its share of the account's pegged total, throttle overlay included).",
      },
      throttleModeInitiator: {
        type: ['string', 'null'],
        description: 'The key that started throttle mode.',
      },
      ...mintFields("the account's own"),
    },
  },
  Limits: {
    type: 'object',
    additionalProperties: false,
    required: [
      'availableToWithdraw',
      ...REPORTED_CAP_FIELDS,
      'throttleModeInitiator',
      ...MINT_FIELD_NAMES,
      'availableToMint',
      'accountCaps',
    ],
    properties: {
      availableToWithdraw: {
        ...int64,
        description: 'Left to withdraw in the current window; rejected withdrawals do not count.',
      },
      pegCap: {
        ...int64,
        description:
          "Cap on the total pegged in, in force: as configured without a mint window, else the lower of it and the pegged total plus availableToMint (a room of 0 while unknown), so that the signers' pegCap − supply is the mint window's room. The configured cap shows in GET /window's effective limits.",
      },
      perDepositCap: { ...int64, description: 'Cap per deposit; null means no cap.' },
      perDepositMinimum: {
        ...int64,
        description: 'Minimum per deposit; null means no minimum.',
      },
      perWithdrawalCap: { ...int64, description: 'Cap per withdrawal; null means no cap.' },
      rollingWithdrawalBlocks: {
        ...int64,
        description: 'Length of the rolling window in blocks.',
      },
      rollingWithdrawalCap: {
        ...int64,
        description:
          'Most that may be withdrawn within the window: the cap in force (the lower of the fixed cap and its share of the pegged total, throttle overlay included). GET /window shows both.',
      },
      throttleModeInitiator: {
        type: ['string', 'null'],
        description: 'The key that started throttle mode; null when off.',
      },
      ...mintFields('the'),
      availableToMint: {
        ...int64,
        description:
          'Left to mint in the mint window: its cap in force less the mints in it; null without a mint window, while it reaches below the mint history or blocks are held; 0 while the limits fail closed.',
      },
      accountCaps: {
        type: 'object',
        description: 'Every account entry, by account name.',
        additionalProperties: { $ref: '#/components/schemas/AccountLimits' },
      },
    },
  },
  LimitsInput: {
    type: 'object',
    additionalProperties: false,
    description:
      "Emily's Limits as its clients send it to POST /limits: each cap absent or null for none; availableToWithdraw is ignored (not settable); throttleModeInitiator null ends throttle mode, the current initiator keeps it; the listed account entries are replaced, the others stay.",
    properties: {
      availableToWithdraw: { ...int64, minimum: 0, description: 'Ignored: not settable.' },
      availableToMint: { ...int64, minimum: 0, description: 'Ignored: not settable.' },
      ...Object.fromEntries(CAP_FIELDS.map((f) => [f, { ...int64, minimum: 0 }])),
      rollingWithdrawalCapShare: EMILY_SHARE_INPUT,
      ...EMILY_MINT_INPUT,
      throttleModeInitiator: {
        type: ['string', 'null'],
        description: 'null ends throttle mode; the current initiator keeps it; nothing else.',
      },
      accountCaps: {
        type: 'object',
        description: 'The account entries to replace, by account name.',
        additionalProperties: { $ref: '#/components/schemas/AccountLimitsInput' },
      },
    },
  },
  AccountLimitsInput: {
    type: 'object',
    additionalProperties: false,
    description:
      "Emily's AccountLimits as its clients send it: the entry's six caps (absent or null for none; all null removes the entry); throttleModeInitiator null or the current initiator.",
    properties: {
      ...Object.fromEntries(CAP_FIELDS.map((f) => [f, { ...int64, minimum: 0 }])),
      rollingWithdrawalCapShare: EMILY_SHARE_INPUT,
      ...EMILY_MINT_INPUT,
      throttleModeInitiator: { type: ['string', 'null'] },
    },
  },
  ThrottleKey: {
    type: 'object',
    additionalProperties: false,
    required: ['name', 'secret'],
    properties: {
      name: { type: 'string', minLength: 1, maxLength: 256 },
      secret: {
        type: 'string',
        minLength: 22,
        maxLength: 1024,
        description: 'At least 22 characters (128 bits); only its salted hash is kept.',
      },
    },
  },
  Chainstate: {
    type: 'object',
    additionalProperties: false,
    required: ['stacksBlockHeight', 'stacksBlockHash', 'bitcoinBlockHeight'],
    properties: {
      stacksBlockHeight: { type: 'integer', minimum: 0 },
      stacksBlockHash: { type: 'string' },
      bitcoinBlockHeight: {
        type: 'integer',
        minimum: 0,
        description: 'The tip it sets (required here, though Emily lets it be null).',
      },
    },
  },
  PegIntegrity: PEG_INTEGRITY,
  Check: {
    type: 'object',
    additionalProperties: false,
    required: ['ok', 'reason', 'limit', 'availableAt'],
    properties: {
      ok: { type: 'boolean', description: 'Whether it would be admitted now.' },
      reason: {
        type: ['string', 'null'],
        enum: [
          null,
          'above_per_withdrawal_cap',
          'window_incomplete',
          'rolling_cap_exceeded',
          'account_rolling_cap_exceeded',
          'below_minimum',
          'above_per_deposit_cap',
          'peg_cap_exceeded',
          'account_peg_cap_exceeded',
          'peg_unbacked',
          'reserves_unknown',
          'mint_window_incomplete',
          'rolling_mint_cap_exceeded',
          'account_rolling_mint_cap_exceeded',
        ],
        description:
          "Why it is refused; null when admitted. peg_unbacked and reserves_unknown: the limits fail closed on the peg's backing (GET /integrity says why).",
      },
      limit: {
        ...int64,
        description: 'The bound the rule allows (the cap, the minimum, or the room left).',
      },
      availableAt: {
        type: ['integer', 'null'],
        description:
          'For a refusal by a window cap: the tip height at which it would pass, if nothing else were withdrawn; for window_incomplete, the tip at which the window becomes complete; null when never, or for any other answer.',
      },
    },
  },
  ThrottleRequest: {
    type: 'object',
    required: ['name', 'secret'],
    properties: {
      name: { type: 'string', minLength: 1, maxLength: 256 },
      secret: { type: 'string', minLength: 1, maxLength: 1024 },
    },
  },
  Event: {
    type: 'object',
    required: ['type'],
    description:
      'An event of the library (limitsSet, blockConnected, withdrawalRequested, …) with amounts as integers.',
    properties: {
      type: {
        type: 'string',
        enum: [
          'limitsSet',
          'limitsUpdated',
          'accountLimitsSet',
          'blockConnected',
          'chainReorganized',
          'withdrawalRequested',
          'withdrawalRejected',
          'withdrawalRejectionUndone',
          'peggedTotalObserved',
          'reservesObserved',
          'pegIntegritySet',
          'pegBreakerCleared',
          'historyCompleteFrom',
          'blocksHeld',
          'blocksReleased',
          'throttleKeyAdded',
          'throttleKeyRevoked',
          'throttleKeyReactivated',
          'throttleStarted',
          'throttleEnded',
        ],
      },
    },
  },
  PendingChange: {
    type: 'object',
    additionalProperties: false,
    required: CHANGE_FIELDS,
    properties: {
      loosens: {
        type: 'array',
        description:
          'What it loosens, field by field: { kind: cap, account (null: global), field, before, after (null: removed), view } | { kind: throttleEnded, initiator } | { kind: keyRevoked, name } | { kind: integrity, field (maxUnbacked, reservesMaxAge), before, after (null: the check off) } | { kind: breakerCleared, tripped }. In the 202 that proposes it and in GET /admin/changes (as if it applied now).',
        items: { type: 'object', required: ['kind'] },
      },
      id: { type: 'integer', minimum: 1 },
      events: {
        type: 'array',
        description: 'The batch, applied all or nothing when the change applies.',
        items: { $ref: '#/components/schemas/Event' },
      },
      proposedBy: { type: 'string', description: 'The operator who sent the batch.' },
      proposedAt: { type: ['integer', 'null'], description: 'The tip then.' },
      delayBlocks: {
        type: ['integer', 'null'],
        description: 'The blocks it waits; null: only a quorum applies it.',
      },
      effectiveAt: {
        type: ['integer', 'null'],
        description: 'The tip at which it applies (inside that block).',
      },
      quorum: {
        type: 'integer',
        description: 'Approvals that apply it at once; 0: none.',
      },
      approvals: {
        type: 'array',
        items: { type: 'string' },
        description: 'The operators who approved it, the proposer first.',
      },
    },
  },
  PendingChanges: {
    type: 'array',
    description: 'The pending changes, oldest first.',
    items: { $ref: '#/components/schemas/PendingChange' },
  },
  Approval: {
    description: 'The change with the approval, or the limits once it applied.',
    oneOf: [
      { $ref: '#/components/schemas/PendingChange' },
      { $ref: '#/components/schemas/Limits' },
    ],
  },
  AuditRecords: {
    type: 'array',
    items: {
      type: 'object',
      required: ['position', 'at', 'actor', 'requestId', 'remote', 'events', 'hash'],
      properties: {
        position: { type: 'integer', minimum: 1 },
        at: { type: 'string', description: 'When the batch was accepted (ISO 8601).' },
        actor: {
          type: 'object',
          required: ['kind'],
          properties: {
            kind: { enum: ['operator', 'throttleKey', 'system'] },
            name: { type: 'string' },
          },
        },
        requestId: { type: 'string' },
        remote: { type: ['string', 'null'], description: "The client's address." },
        events: { type: 'array', items: { $ref: '#/components/schemas/Event' } },
        settled: {
          type: 'array',
          description:
            "Pending changes applied, dropped or cancelled inside the batch: the system's doing.",
        },
        repair: {
          type: 'object',
          description:
            'The first record of a new chain after a break (--audit-repair): where and why.',
        },
        hash: { type: 'string', pattern: '^[0-9a-f]{64}$' },
      },
    },
  },
  Problem: {
    type: 'object',
    description: 'An RFC 9457 problem.',
    required: ['type', 'title', 'status', 'detail', 'code', 'message'],
    properties: {
      type: { type: 'string' },
      title: { type: 'string' },
      status: { type: 'integer' },
      detail: { type: 'string' },
      code: { type: 'string', description: 'Stable snake_case error code.' },
      message: {
        type: 'string',
        description: "The same text as detail, for clients that read Emily's ErrorResponse.",
      },
      path: { type: 'string', description: 'The field at fault, when one is.' },
    },
  },
} as const;
