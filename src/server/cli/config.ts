/**
 * The server's configuration: a JSON file of limits, history, throttle profile and keys
 * (what an empty log starts from), and of the operators, the chain bounds and what a
 * loosening waits for; or the embedded default.
 */
import { readFile } from 'node:fs/promises';
import {
  applyAll,
  type ChainBounds,
  createLimitsState,
  DEFAULT_CHAIN_BOUNDS,
  LimitsError,
  type LimitsEvent,
  type LimitsOptions,
  type LimitsState,
  type LooseningPolicy,
  looseningPolicyFromJson,
  NO_WAITING,
  type Operator,
  tryDecodeJson,
} from 'peg-limits';
import { located, operatorsFromJson } from '../../internal.js';

/** The configuration used when `--config` is not given: a BTC bridge with modest caps. */
export const DEFAULT_SERVER_CONFIG = {
  historyBlocks: 2016,
  limits: {
    pegCap: 100_000_000_000n, // 1000 BTC
    perDepositMinimum: 10_000n, // 0.0001 BTC
    perDepositCap: 1_000_000_000n, // 10 BTC
    perWithdrawalCap: 1_000_000_000n, // 10 BTC
    rollingWithdrawalBlocks: 144n, // about a day
    rollingWithdrawalCap: 10_000_000_000n, // 100 BTC
  },
  throttleKeys: [] as ReadonlyArray<{ readonly name: string; readonly secretHash: string }>,
} as const;

const FIELDS = [
  'limits',
  'historyBlocks',
  'throttleProfile',
  'throttleKeys',
  'operators',
  'chainBounds',
  'loosening',
  'alertSecret',
];

/** What a configuration holds besides the initial state. */
export interface ServerConfig {
  /** The state an empty log starts from. */
  readonly state: LimitsState;
  /** The operators and their scopes (empty: only `PEG_LIMITS_ADMIN_TOKEN`, if set). */
  readonly operators: ReadonlyArray<Operator>;
  readonly chainBounds: ChainBounds;
  readonly loosening: LooseningPolicy;
  /** Signs each alert (`--alert-secret` wins over it). */
  readonly alertSecret: string | undefined;
}

function bound(value: unknown, path: string, min: number, source: string): number {
  if (typeof value !== 'bigint' || value < BigInt(min))
    throw new LimitsError(
      'invalid_option',
      `${source}: ${path}: expected an integer of at least ${min}, got ${typeof value === 'bigint' ? value : JSON.stringify(value)}`,
      path,
    );
  // Past 2^53 no chain can go: such a bound is no bound.
  return value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(value);
}

function chainBoundsOf(value: unknown, source: string): ChainBounds {
  if (value === undefined) return DEFAULT_CHAIN_BOUNDS;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new LimitsError(
      'invalid_option',
      `${source}: chainBounds: expected { maxTipAdvance, maxReorgDepth }`,
      'chainBounds',
    );
  const fields = value as Record<string, unknown>;
  for (const key of Object.keys(fields))
    if (key !== 'maxTipAdvance' && key !== 'maxReorgDepth')
      throw new LimitsError(
        'unknown_field',
        `${source}: chainBounds.${key}: unknown field; expected maxTipAdvance, maxReorgDepth`,
        `chainBounds.${key}`,
      );
  return {
    maxTipAdvance:
      fields.maxTipAdvance === undefined
        ? DEFAULT_CHAIN_BOUNDS.maxTipAdvance
        : bound(fields.maxTipAdvance, 'chainBounds.maxTipAdvance', 1, source),
    maxReorgDepth:
      fields.maxReorgDepth === undefined
        ? DEFAULT_CHAIN_BOUNDS.maxReorgDepth
        : bound(fields.maxReorgDepth, 'chainBounds.maxReorgDepth', 0, source),
  };
}

/**
 * Reads the operators, the chain bounds and the loosening policy of a decoded configuration
 * object, besides its initial state. Throws a LimitsError whose message names the field.
 *
 * @param reserved - operator names taken already (`admin` when `PEG_LIMITS_ADMIN_TOKEN` is set)
 */
export function serverConfigFrom(
  config: unknown,
  source = 'config',
  reserved: ReadonlyArray<string> = [],
): ServerConfig {
  const state = stateFromConfig(config, source);
  const fields = config as Record<string, unknown>;
  let operators: ReadonlyArray<Operator> = [];
  if (fields.operators !== undefined) {
    const r = operatorsFromJson(fields.operators, reserved);
    if (!r.ok) throw new LimitsError(r.error.code, `${source}: ${located(r.error)}`, r.error.path);
    operators = r.operators;
  }
  let loosening = NO_WAITING;
  if (fields.loosening !== undefined) {
    const r = looseningPolicyFromJson(fields.loosening);
    if (!r.ok) throw new LimitsError(r.error.code, `${source}: ${located(r.error)}`, r.error.path);
    loosening = r.policy;
  }
  const alertSecret = fields.alertSecret;
  if (alertSecret !== undefined && typeof alertSecret !== 'string')
    throw new LimitsError(
      'invalid_option',
      `${source}: alertSecret: expected a string`,
      'alertSecret',
    );
  return {
    state,
    operators,
    chainBounds: chainBoundsOf(fields.chainBounds, source),
    loosening,
    alertSecret,
  };
}

/**
 * Builds the initial state from a decoded configuration object (integers as bigint); the
 * other fields are {@link serverConfigFrom}'s. Throws a LimitsError whose message names the
 * field at fault.
 */
export function stateFromConfig(config: unknown, source = 'config'): LimitsState {
  if (typeof config !== 'object' || config === null || Array.isArray(config))
    throw new LimitsError('invalid_option', `${source}: expected a JSON object`);
  const fields = config as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    if (!FIELDS.includes(key)) {
      throw new LimitsError(
        'unknown_field',
        `${source}: unknown field "${key}"; expected ${FIELDS.join(', ')}`,
        key,
      );
    }
  }
  const history = fields.historyBlocks;
  const options: Record<string, unknown> = {};
  if (history !== undefined) {
    options.historyBlocks =
      typeof history === 'bigint' && history <= 1_000_000n ? Number(history) : history;
  }
  if (fields.limits !== undefined) options.limits = fields.limits;
  if (fields.throttleProfile !== undefined) options.throttleProfile = fields.throttleProfile;
  let state: LimitsState;
  try {
    state = createLimitsState(options as LimitsOptions);
  } catch (e) {
    if (e instanceof LimitsError) throw new LimitsError(e.code, `${source}: ${located(e)}`, e.path);
    throw e;
  }
  const keys = fields.throttleKeys ?? [];
  if (!Array.isArray(keys))
    throw new LimitsError(
      'invalid_option',
      `${source}: throttleKeys must be an array of { name, secretHash }`,
    );
  const events: LimitsEvent[] = keys.map((k) => ({
    type: 'throttleKeyAdded',
    name: (k as { name: string }).name,
    secretHash: (k as { secretHash: string }).secretHash,
  }));
  const r = applyAll(state, events);
  if (!r.ok) {
    const path = `throttleKeys${r.error.path ?? ''}`;
    throw new LimitsError(r.error.code, `${source}: ${path}: ${r.error.message}`, path);
  }
  return r.state;
}

/** Reads and validates a configuration file. */
export async function loadConfig(
  file: string,
  reserved: ReadonlyArray<string> = [],
): Promise<ServerConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new LimitsError(
      'invalid_option',
      `cannot read the configuration ${file}: ${(e as Error).message}`,
    );
  }
  const json = tryDecodeJson(text);
  if (!json.ok) throw new LimitsError('invalid_json', `${file}: ${json.error.message}`);
  return serverConfigFrom(json.value, file, reserved);
}
