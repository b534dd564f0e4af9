/**
 * What `peg-limits serve` and `peg-limits migrate-journal` read of their flags, the
 * environment and the configuration file, each checked in one order so that the first
 * mistake is the one a person is told of (exit code 2). Node-only.
 */
import { access, constants } from 'node:fs/promises';
import { hashOperatorToken, LimitsError, type Operator } from 'peg-limits';
import { ADMIN_OPERATOR, MIN_TOKEN_LENGTH } from '../../internal.js';
import { BITCOIN_READER } from '../bitcoin/index.js';
import { DEFAULT_SNAPSHOT_EVERY } from '../data-folder/index.js';
import type { ServerLimits } from '../node-http/index.js';
import { redactAlertUrl, redactStore, redactUrl } from '../ops/index.js';
import { DEFAULT_KEEP_BATCHES, DEFAULT_PG_SNAPSHOT_EVERY } from '../postgres/index.js';
import { isAlertUrl, MIN_ALERT_SECRET_LENGTH } from '../record/index.js';
import {
  type ClarityCodec,
  isPrivateAddress,
  loadClarityCodec,
  MAINNET_REGISTRY,
  STACKS_NODE_CONFIRMED_OPERATOR,
  STACKS_NODE_OPERATOR,
} from '../stacks/index.js';
import {
  DEFAULT_SERVER_CONFIG,
  loadConfig,
  type ServerConfig,
  serverConfigFrom,
} from './config.js';
import {
  connectionLimitsOf,
  fail,
  parseServeArgs,
  positive,
  type ServeValues,
  USAGE,
} from './options.js';

/** The flags' settings, checked. */
export interface Settings {
  readonly values: ServeValues;
  readonly str: (k: string) => string | undefined;
  readonly port: number;
  readonly limits: ServerLimits;
  readonly cors: false | '*' | ReadonlyArray<string>;
  /** `--cache-max-age`: seconds (0: caches ask each time). */
  readonly cacheMaxAge: number;
  readonly alertUrls: ReadonlyArray<string>;
  readonly postgres: string | undefined;
  readonly stores: { snapshotEvery: number; keepBatches: number; connectTimeoutMs: number };
  readonly adminToken: string | undefined;
  readonly configFile: string | undefined;
  readonly observer: ObserverFlags | undefined;
  readonly codec: ClarityCodec | undefined;
  readonly reserved: ReadonlyArray<string>;
  readonly config: ServerConfig;
  readonly alertSecret: string | undefined;
  /** `--bitcoin-rpc` and what goes with it; undefined without it. */
  readonly bitcoin: BitcoinFlags | undefined;
}

/** Reads the flags after the subcommand; `undefined` when they ask for the usage text. */
export async function readSettings(rest: ReadonlyArray<string>): Promise<Settings | undefined> {
  const values = parseServeArgs(rest);
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return undefined;
  }
  const str = (k: string) => values[k] as string | undefined;
  const port = str('port') === undefined ? 8080 : Number(str('port'));
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    fail(`--port must be 0 to 65535, got ${str('port')}`);
  const limits = connectionLimitsOf(values);
  const cors = corsFrom(values);
  const cacheMaxAge = cacheMaxAgeFrom(str('cache-max-age'));
  const alertUrls = (values['alert-url'] as string[] | undefined) ?? [];
  for (const url of alertUrls)
    if (!isAlertUrl(url)) fail(`--alert-url takes an http(s) URL, got ${redactAlertUrl(url)}`);
  const postgres = str('store') ?? (process.env.PEG_LIMITS_STORE || undefined);
  if (postgres !== undefined && !/^postgres(ql)?:\/\//.test(postgres))
    fail(
      `--store takes a PostgreSQL connection string (postgres://…), got ${redactStore(postgres)}`,
    );
  const stores = {
    snapshotEvery: positive(
      'snapshot-every',
      str('snapshot-every'),
      postgres === undefined ? DEFAULT_SNAPSHOT_EVERY : DEFAULT_PG_SNAPSHOT_EVERY,
    ),
    keepBatches: positive('keep-batches', str('keep-batches'), DEFAULT_KEEP_BATCHES),
    connectTimeoutMs: positive('connect-timeout', str('connect-timeout'), 15_000, 1000),
  };
  const adminToken = process.env.PEG_LIMITS_ADMIN_TOKEN || undefined;
  if (adminToken !== undefined && adminToken.length < MIN_TOKEN_LENGTH)
    fail(
      `PEG_LIMITS_ADMIN_TOKEN has ${adminToken.length} characters; an operator token needs at least ${MIN_TOKEN_LENGTH} (128 bits): make one with \`peg-limits token\``,
    );
  const configFile = str('config');
  const observer = observerFrom(values);
  const bitcoin = await bitcoinFrom(values, observer);
  const codec =
    observer === undefined
      ? undefined
      : await loadClarityCodec().catch((e: unknown) => fail((e as Error).message));
  const reserved = [
    ...(adminToken === undefined ? [] : [ADMIN_OPERATOR]),
    ...(observer === undefined ? [] : [STACKS_NODE_OPERATOR, STACKS_NODE_CONFIRMED_OPERATOR]),
    ...(bitcoin === undefined ? [] : [BITCOIN_READER.name]),
  ];
  const config = await serveConfig(configFile, reserved, adminToken);
  const alertSecret =
    str('alert-secret') ?? (process.env.PEG_LIMITS_ALERT_SECRET || undefined) ?? config.alertSecret;
  if (alertSecret !== undefined && alertSecret.length < MIN_ALERT_SECRET_LENGTH)
    fail(
      `--alert-secret has ${alertSecret.length} characters; it needs at least ${MIN_ALERT_SECRET_LENGTH} (128 bits): make one with \`peg-limits token\``,
    );
  return {
    values,
    str,
    port,
    limits,
    cors,
    cacheMaxAge,
    alertUrls,
    postgres,
    stores,
    adminToken,
    configFile,
    observer,
    codec,
    reserved,
    config,
    alertSecret,
    bitcoin,
  };
}

/** The reserves reader the flags ask for. */
interface BitcoinFlags {
  readonly url: string;
  readonly cookieFile: string | undefined;
  readonly descriptors: ReadonlyArray<string>;
}

// `--bitcoin-rpc` and its companions, checked: an http(s) URL (never printed with its
// credentials), a cookie file that can be read, descriptors, and something to scan.
async function bitcoinFrom(
  values: ServeValues,
  observer: ObserverFlags | undefined,
): Promise<BitcoinFlags | undefined> {
  const url = values['bitcoin-rpc'] as string | undefined;
  const cookieFile = values['bitcoin-rpc-cookie'] as string | undefined;
  const descriptors = (values['reserves-descriptor'] as string[] | undefined) ?? [];
  if (url === undefined) {
    if (cookieFile !== undefined) fail('--bitcoin-rpc-cookie goes with --bitcoin-rpc');
    if (descriptors.length > 0) fail('--reserves-descriptor goes with --bitcoin-rpc');
    return undefined;
  }
  let u: URL | undefined;
  try {
    u = new URL(url);
  } catch {
    u = undefined;
  }
  if (u === undefined || (u.protocol !== 'http:' && u.protocol !== 'https:'))
    fail(`--bitcoin-rpc takes an http(s) URL, got ${redactUrl(url, { query: true })}`);
  for (const d of descriptors)
    if (!/^[\x21-\x7e]{3,1000}$/.test(d))
      fail(
        `--reserves-descriptor takes an output descriptor such as tr(<x-only key>), got ${JSON.stringify(d.slice(0, 60))}`,
      );
  if (observer === undefined && descriptors.length === 0)
    fail(
      "--bitcoin-rpc needs the wallets to scan: --stacks-observer (the registry's keys, read with --stacks-rpc and from its key-rotation prints) or --reserves-descriptor",
    );
  if (cookieFile !== undefined)
    await access(cookieFile, constants.R_OK).catch(() =>
      fail(`--bitcoin-rpc-cookie ${cookieFile} cannot be read`),
    );
  return { url, cookieFile, descriptors };
}

// CORS of the flags: any origin (the default), the origins listed, or none.
function corsFrom(values: ServeValues): false | '*' | ReadonlyArray<string> {
  const origins = (values['cors-origin'] as string[] | undefined) ?? [];
  if (values['no-cors'] === true && origins.length > 0)
    fail('--no-cors and --cors-origin contradict each other');
  for (const origin of origins) {
    if (!/^https?:\/\/[^/\s]+$/.test(origin))
      fail(`--cors-origin takes an origin such as https://bridge.example (no path), got ${origin}`);
  }
  return values['no-cors'] === true ? false : origins.length > 0 ? origins : '*';
}

/** The Stacks observer the flags ask for. */
export interface ObserverFlags {
  readonly at: string;
  readonly host: string;
  readonly port: number;
  readonly registry: string;
  readonly rpcUrl: string | undefined;
}

// The Stacks observer's flags, checked; undefined without --stacks-observer.
function observerFrom(values: ServeValues): ObserverFlags | undefined {
  const str = (k: string) => values[k] as string | undefined;
  const at = str('stacks-observer');
  const host = at?.replace(/:\d+$/, '') ?? '';
  const port = Number(/:(\d{1,5})$/.exec(at ?? '')?.[1] ?? Number.NaN);
  if (at !== undefined && (host === '' || !(port >= 0 && port <= 65535)))
    fail(`--stacks-observer takes HOST:PORT (127.0.0.1:0 picks a port), got ${at}`);
  if (at !== undefined && !isPrivateAddress(host) && values['stacks-observer-public'] !== true)
    fail(
      `--stacks-observer ${at} is not a loopback or private address: the observer takes no credentials (a node sends none), so anyone who reaches it feeds the chain; pass --stacks-observer-public to listen there anyway`,
    );
  const registry = str('sbtc-registry') ?? MAINNET_REGISTRY;
  if (!/^S[A-Z0-9]{27,40}\.[a-zA-Z][a-zA-Z0-9-]{0,127}$/.test(registry))
    fail(`--sbtc-registry takes a contract (ADDRESS.name), got ${registry}`);
  const rpcUrl = str('stacks-rpc');
  if (rpcUrl !== undefined) {
    if (at === undefined) fail('--stacks-rpc goes with --stacks-observer');
    let u: URL | undefined;
    try {
      u = new URL(rpcUrl);
    } catch {
      u = undefined;
    }
    if (u === undefined || (u.protocol !== 'http:' && u.protocol !== 'https:'))
      fail(`--stacks-rpc takes an http(s) URL, got ${redactUrl(rpcUrl, { query: true })}`);
  }
  if (values['stacks-history-complete'] === true && at === undefined)
    fail('--stacks-history-complete goes with --stacks-observer');
  return at === undefined ? undefined : { at, host, port, registry, rpcUrl };
}

// The configuration file, or the embedded one; the admin token checked against it.
async function serveConfig(
  configFile: string | undefined,
  reserved: ReadonlyArray<string>,
  adminToken: string | undefined,
): Promise<ServerConfig> {
  try {
    const config =
      configFile === undefined
        ? serverConfigFrom(DEFAULT_SERVER_CONFIG, 'embedded configuration')
        : await loadConfig(configFile, reserved);
    checkAdminToken(config.operators, adminToken);
    return config;
  } catch (e) {
    if (e instanceof LimitsError) fail(`invalid configuration: ${e.message}`);
    throw e;
  }
}

/** The operators in force, for the log. */
export function describeOperators(
  list: ReadonlyArray<Operator>,
  adminToken: string | undefined,
): string {
  const all = [
    ...(adminToken === undefined ? [] : [`${ADMIN_OPERATOR} (chain, limits, keys)`]),
    ...list.map((o) => `${o.name} (${o.scopes.join(', ')})`),
  ];
  return all.length === 0 ? 'none (the operator routes are off)' : all.join(', ');
}

/** The admin token must not be a configured operator's too: one token, one operator. */
export function checkAdminToken(
  list: ReadonlyArray<Operator>,
  adminToken: string | undefined,
): void {
  if (adminToken === undefined) return;
  const hash = hashOperatorToken(adminToken);
  const same = list.find((o) => o.tokenHash === hash);
  if (same !== undefined)
    throw new LimitsError(
      'invalid_option',
      `PEG_LIMITS_ADMIN_TOKEN is the token of the operator ${JSON.stringify(same.name)} too: give each operator a token of its own`,
    );
}

// --cache-max-age: whole seconds from 0 (caches ask each time) to a day.
function cacheMaxAgeFrom(value: string | undefined): number {
  if (value === undefined) return 0;
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || n > 86_400)
    fail(`--cache-max-age takes whole seconds from 0 to 86400, got ${value}`);
  return n;
}
