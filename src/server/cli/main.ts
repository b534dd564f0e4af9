/**
 * The `peg-limits serve` command as a function, so that it can be run with an injected
 * journal file. Exit codes: 0 stopped cleanly, 2 bad options or a damaged data folder,
 * 3 a failed flush.
 */
import {
  type EventLog,
  hashOperatorToken,
  LimitsError,
  type LimitsState,
  type Operator,
} from 'peg-limits';
import { ADMIN_OPERATOR, MIN_TOKEN_LENGTH } from '../../internal.js';
import {
  DEFAULT_SNAPSHOT_EVERY,
  dataAlertCursors,
  type OpenJournalFile,
  openDataLog,
  StoreError,
} from '../data-folder/index.js';
import {
  DEFAULT_SERVER_LIMITS,
  type RunningServer,
  type ServerLimits,
  type ServerOptions,
  startServer,
} from '../node-http/index.js';
import {
  type CommandLogger,
  createLogger,
  LoggerUnavailable,
  redactAlertUrl,
  redactStore,
  redactUrl,
} from '../ops/index.js';
import {
  DEFAULT_KEEP_BATCHES,
  DEFAULT_PG_SNAPSHOT_EVERY,
  openPgLog,
  PgLogError,
  pgAlertCursors,
} from '../postgres/index.js';
import { isAlertUrl, MIN_ALERT_SECRET_LENGTH } from '../record/index.js';
import {
  type ClarityCodec,
  dataBlockMemory,
  isPrivateAddress,
  loadClarityCodec,
  MAINNET_REGISTRY,
  pgBlockMemory,
  STACKS_NODE_CONFIRMED_OPERATOR,
  STACKS_NODE_OPERATOR,
  StacksRpc,
} from '../stacks/index.js';
import { auditCommand } from './audit-command.js';
import {
  DEFAULT_SERVER_CONFIG,
  loadConfig,
  type ServerConfig,
  serverConfigFrom,
} from './config.js';
import { migrateJournal } from './migrate-command.js';
import { fail, parseServeArgs, positive, type ServeValues, USAGE } from './options.js';
import { tokenCommand } from './token-command.js';

const L = DEFAULT_SERVER_LIMITS;

export { USAGE } from './options.js';

/** Hooks for tests. */
export interface CommandHooks {
  readonly openJournalFile?: OpenJournalFile | undefined;
}

/** Runs `peg-limits <argv>`. */
export async function serveCommand(
  argv: ReadonlyArray<string>,
  hooks: CommandHooks = {},
): Promise<void> {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h' || command === undefined) {
    process.stdout.write(`${USAGE}\n`);
    if (command === undefined) process.exitCode = 2;
    return;
  }
  if (command === 'token') return tokenCommand(rest);
  if (command === 'audit') return auditCommand(rest);
  if (command !== 'serve' && command !== 'migrate-journal')
    fail(`unknown command "${command}"\n${USAGE}`);
  const values = parseServeArgs(rest);
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const str = (k: string) => values[k] as string | undefined;
  const port = str('port') === undefined ? 8080 : Number(str('port'));
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    fail(`--port must be 0 to 65535, got ${str('port')}`);
  const limits = limitsFrom(str);
  const cors = corsFrom(values);
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
  const codec =
    observer === undefined
      ? undefined
      : await loadClarityCodec().catch((e: unknown) => fail((e as Error).message));
  const reserved = [
    ...(adminToken === undefined ? [] : [ADMIN_OPERATOR]),
    ...(observer === undefined ? [] : [STACKS_NODE_OPERATOR, STACKS_NODE_CONFIRMED_OPERATOR]),
  ];
  const config = await serveConfig(configFile, reserved, adminToken);
  const alertSecret =
    str('alert-secret') ?? (process.env.PEG_LIMITS_ALERT_SECRET || undefined) ?? config.alertSecret;
  if (alertSecret !== undefined && alertSecret.length < MIN_ALERT_SECRET_LENGTH)
    fail(
      `--alert-secret has ${alertSecret.length} characters; it needs at least ${MIN_ALERT_SECRET_LENGTH} (128 bits): make one with \`peg-limits token\``,
    );

  if (command === 'migrate-journal') {
    if (postgres === undefined || str('data') === undefined)
      fail(`migrate-journal needs --data DIR and --store postgres://…\n${USAGE}`);
    await migrateJournal(str('data')!, postgres, config.state);
    return;
  }
  const logger = await loggerFrom(values);
  const log = (line: string) => logger.message(line);
  // Past `ulimit -f` a write must fail (EFBIG), not kill the process: the store cuts the
  // line back and answers 500.
  process.on('SIGXFSZ', () => undefined);
  // The command chooses the log; the server only serves from it.
  const dir = str('data') ?? './peg-limits-data';
  const eventLog = await openEventLog({
    postgres,
    dir,
    stores,
    state: config.state,
    auditRepair: values['audit-repair'] === true,
    log,
    hooks,
  });
  // The operators in force; SIGHUP swaps them for the file's, or keeps them when it fails.
  const operators = { now: config.operators };
  const holding = (list: ReadonlyArray<Operator>) =>
    list.filter((o) => o.scopes.includes('limits')).length + (adminToken === undefined ? 0 : 1);
  if (config.loosening.quorum > holding(operators.now))
    log(
      `warning: loosening asks a quorum of ${config.loosening.quorum}, but only ${holding(operators.now)} operator(s) hold the limits scope${config.loosening.delayBlocks === null ? ': no change can apply' : ': changes apply by their delay only'}`,
    );
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer({
      log: eventLog,
      host: str('host') ?? '127.0.0.1',
      port,
      adminToken,
      operators: () => operators.now,
      chainBounds: config.chainBounds,
      loosening: config.loosening,
      logRequest: (line) => logger.request(line),
      warn: log,
      metrics: values['no-metrics'] !== true,
      metricsOffHint: '--no-metrics',
      alerts: {
        urls: alertUrls,
        secret: alertSecret,
        cursors: postgres !== undefined ? pgAlertCursors(postgres) : dataAlertCursors(dir),
      },
      connectionLimits: limits,
      cors,
      stacksObserver:
        observer === undefined || codec === undefined
          ? undefined
          : observerOptions(observer, codec, config, postgres, dir, values),
    });
  } catch (e) {
    await eventLog.close().catch(() => undefined);
    fail(`cannot start: ${(e as Error).message}`);
  }
  process.stdout.write(`listening on ${server.url}\n`);
  if (server.stacksObserver !== undefined) {
    process.stdout.write(`stacks observer on ${server.stacksObserver}\n`);
    if (!isPrivateAddress(observer!.host))
      log(
        `warning: the stacks observer listens on ${observer!.host}, which is not private: it takes no credentials, so anyone who reaches it feeds the chain (chain bounds still apply)`,
      );
  }
  handleSignals(server, log, { configFile, reserved, adminToken, operators });
  log(
    `operators: ${describeOperators(operators.now, adminToken)}${observer === undefined ? '' : `, ${STACKS_NODE_OPERATOR} (chain) for the stacks observer`}`,
  );
}

// The connections' limits of the flags, each a positive number (seconds in milliseconds).
function limitsFrom(str: (k: string) => string | undefined): ServerLimits {
  return {
    ...L,
    headersTimeoutMs: positive('header-timeout', str('header-timeout'), L.headersTimeoutMs, 1000),
    requestTimeoutMs: positive('request-timeout', str('request-timeout'), L.requestTimeoutMs, 1000),
    keepAliveTimeoutMs: positive(
      'keep-alive-timeout',
      str('keep-alive-timeout'),
      L.keepAliveTimeoutMs,
      1000,
    ),
    maxConnections: positive('max-connections', str('max-connections'), L.maxConnections),
    maxHeaderBytes: positive('max-header-size', str('max-header-size'), L.maxHeaderBytes),
    maxPipelined: positive('max-pipelined', str('max-pipelined'), L.maxPipelined),
    maxStreams: positive('max-streams', str('max-streams'), L.maxStreams),
    heartbeatMs: positive('heartbeat', str('heartbeat'), L.heartbeatMs, 1000),
    lingerMs: positive('linger-time', str('linger-time'), L.lingerMs, 1000),
    lingerBytes: positive('linger-bytes', str('linger-bytes'), L.lingerBytes),
  };
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
interface ObserverFlags {
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

// The server's options for the observer of the flags.
function observerOptions(
  observer: ObserverFlags,
  codec: ClarityCodec,
  config: ServerConfig,
  postgres: string | undefined,
  dir: string,
  values: ServeValues,
): NonNullable<ServerOptions['stacksObserver']> {
  return {
    host: observer.host.replace(/^\[|\]$/g, ''),
    port: observer.port,
    registry: observer.registry,
    decode: codec.decode,
    memory: postgres !== undefined ? pgBlockMemory(postgres) : dataBlockMemory(dir),
    keepBurnBlocks: config.chainBounds.maxReorgDepth + 6,
    rpc:
      observer.rpcUrl === undefined
        ? undefined
        : new StacksRpc({ url: observer.rpcUrl, registry: observer.registry, codec }),
    historyComplete: values['stacks-history-complete'] === true,
    startRetryMs: positive(
      'stacks-rpc-retry',
      values['stacks-rpc-retry'] as string | undefined,
      10_000,
      1000,
    ),
  };
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

// The command's log, as --quiet and --log-format say.
async function loggerFrom(values: ServeValues): Promise<CommandLogger> {
  const format = (values['log-format'] as string | undefined) ?? 'text';
  if (format !== 'text' && format !== 'json')
    fail(`--log-format takes text or json, got ${format}`);
  try {
    return await createLogger(format, values.quiet === true);
  } catch (e) {
    if (e instanceof LoggerUnavailable) fail(e.message);
    throw e;
  }
}

// Opens the event log the flags name: PostgreSQL with --store, else the data folder.
async function openEventLog(at: {
  readonly postgres: string | undefined;
  readonly dir: string;
  readonly stores: { snapshotEvery: number; keepBatches: number; connectTimeoutMs: number };
  readonly state: LimitsState;
  readonly auditRepair: boolean;
  readonly log: (line: string) => void;
  readonly hooks: CommandHooks;
}): Promise<EventLog> {
  const { postgres, dir, stores, state, auditRepair, log } = at;
  const opening = performance.now();
  try {
    if (postgres !== undefined) {
      const eventLog = await openPgLog({
        auditRepair,
        url: postgres,
        initial: state,
        snapshotEvery: stores.snapshotEvery,
        keepBatches: stores.keepBatches,
        connectTimeoutMs: stores.connectTimeoutMs,
        logLine: log,
      });
      log(
        `opened the log on PostgreSQL at position ${eventLog.position} in ${(performance.now() - opening).toFixed(0)} ms`,
      );
      return eventLog;
    }
    const data = await openDataLog({
      dir,
      auditRepair,
      initial: state,
      snapshotEvery: stores.snapshotEvery,
      logLine: log,
      openJournalFile: at.hooks.openJournalFile,
      onFatal: (error) => {
        process.stderr.write(
          `peg-limits: ${error.message}; stopping (what reached the disk is unknown: a restart reads what is there)\n`,
        );
        process.exit(3);
      },
    });
    for (const warning of data.warnings) log(`warning: ${warning}`);
    log(
      `opened ${dir}: ${data.position} batches, ${data.replayed} replayed from the journal, in ${(performance.now() - opening).toFixed(0)} ms`,
    );
    return data;
  } catch (e) {
    if (e instanceof StoreError || e instanceof PgLogError) fail(e.message);
    fail(`cannot start: ${(e as Error).message}`);
  }
}

// SIGINT and SIGTERM finish the requests in flight and stop; SIGHUP reloads the operators.
function handleSignals(
  server: RunningServer,
  log: (line: string) => void,
  reload: {
    readonly configFile: string | undefined;
    readonly reserved: ReadonlyArray<string>;
    readonly adminToken: string | undefined;
    readonly operators: { now: ReadonlyArray<Operator> };
  },
): void {
  const { configFile, reserved, adminToken, operators } = reload;
  const stop = (signal: string) => {
    log(`${signal}: finishing requests in flight, then writing a snapshot`);
    server.close().then(
      () => process.exit(0),
      (e: unknown) => fail(`error while closing: ${(e as Error).message}`),
    );
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGHUP', () => {
    if (configFile === undefined) {
      log('SIGHUP: no --config to read operators from; the operators stay as they are');
      return;
    }
    loadConfig(configFile, reserved)
      .then((fresh) => {
        checkAdminToken(fresh.operators, adminToken);
        operators.now = fresh.operators;
        log(
          `SIGHUP: operators reloaded from ${configFile}: ${describeOperators(operators.now, adminToken)}`,
        );
      })
      .catch((e: unknown) => {
        log(
          `warning: SIGHUP: the operators were not reloaded, the previous ones stay (${describeOperators(operators.now, adminToken)}): ${(e as Error).message}`,
        );
      });
  });
}

function describeOperators(list: ReadonlyArray<Operator>, adminToken: string | undefined): string {
  const all = [
    ...(adminToken === undefined ? [] : [`${ADMIN_OPERATOR} (chain, limits, keys)`]),
    ...list.map((o) => `${o.name} (${o.scopes.join(', ')})`),
  ];
  return all.length === 0 ? 'none (the operator routes are off)' : all.join(', ');
}

// The admin token must not be a configured operator's too: one token, one operator.
function checkAdminToken(list: ReadonlyArray<Operator>, adminToken: string | undefined): void {
  if (adminToken === undefined) return;
  const hash = hashOperatorToken(adminToken);
  const same = list.find((o) => o.tokenHash === hash);
  if (same !== undefined)
    throw new LimitsError(
      'invalid_option',
      `PEG_LIMITS_ADMIN_TOKEN is the token of the operator ${JSON.stringify(same.name)} too: give each operator a token of its own`,
    );
}
