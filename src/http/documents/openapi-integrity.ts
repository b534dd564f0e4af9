/**
 * The OpenAPI document's schema of `GET /integrity`: what the check of the peg's backing sees
 * (docs/semantics.md, "A forged mint cannot be withdrawn"). Pure data.
 */

const int64 = { type: ['integer', 'null'], format: 'int64' } as const;

/** The body of `GET /integrity`. */
export const PEG_INTEGRITY = {
  type: 'object',
  additionalProperties: false,
  required: [
    'state',
    'peggedTotal',
    'reserves',
    'reservesHeight',
    'unbacked',
    'maxUnbacked',
    'reservesMaxAge',
    'tripped',
  ],
  properties: {
    state: {
      type: 'string',
      enum: ['off', 'backed', 'reserves_unknown', 'tripped'],
      description:
        'off: no check; backed: the reserves are known and cover the pegged total within maxUnbacked; reserves_unknown: never read, or read more than reservesMaxAge blocks below the tip (the limits fail closed until a fresh reading); tripped: the peg was unbacked, and the limits fail closed until an operator clears the breaker.',
    },
    peggedTotal: { ...int64, type: 'integer', description: 'The pegged total last observed.' },
    reserves: { ...int64, description: 'The reserves last read; null before any reading.' },
    reservesHeight: {
      type: ['integer', 'null'],
      description: 'The burn height they were read at.',
    },
    unbacked: {
      ...int64,
      description: 'max(0, peggedTotal − reserves) while the reserves are known; else null.',
    },
    maxUnbacked: {
      ...int64,
      description: 'How much may be unbacked before the breaker trips; null: the check is off.',
    },
    reservesMaxAge: {
      type: 'integer',
      minimum: 1,
      description: 'The age, in blocks below the tip, past which the reserves are unknown.',
    },
    tripped: {
      type: ['object', 'null'],
      additionalProperties: false,
      required: ['height', 'peggedTotal', 'reserves', 'unbacked'],
      description: 'Where the breaker tripped, and the figures then; null while it has not.',
      properties: {
        height: { type: ['integer', 'null'], description: 'The tip then.' },
        peggedTotal: { type: 'integer', format: 'int64' },
        reserves: { type: 'integer', format: 'int64' },
        unbacked: { type: 'integer', format: 'int64' },
      },
    },
  },
} as const;
