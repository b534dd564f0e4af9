/**
 * The server's configuration: a JSON file of limits, history, throttle profile and keys,
 * or the embedded default.
 */
import { readFile } from 'node:fs/promises';
import {
  applyAll,
  createLimitsState,
  LimitsError,
  type LimitsEvent,
  type LimitsOptions,
  type LimitsState,
  tryDecodeJson,
} from 'peg-limits';

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

const FIELDS = ['limits', 'historyBlocks', 'throttleProfile', 'throttleKeys'];

/**
 * Builds the initial state from a decoded configuration object (integers as bigint).
 * Throws a LimitsError whose message names the field at fault.
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
    if (e instanceof LimitsError) throw new LimitsError(e.code, `${source}: ${e.message}`, e.path);
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
  if (!r.ok)
    throw new LimitsError(
      r.error.code,
      `${source}: throttleKeys${r.error.message.replace(/^event (\d+): /, '[$1]: ')}`,
      `throttleKeys${r.error.path ?? ''}`,
    );
  return r.state;
}

/** Reads and validates a configuration file. */
export async function loadConfig(file: string): Promise<LimitsState> {
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
  return stateFromConfig(json.value, file);
}
