/**
 * `peg-limits serve`: the service on the event log the flags name, its observer, its alerts
 * and its signals (SIGINT and SIGTERM stop it, SIGHUP reloads the operators). Exit codes: 0
 * stopped cleanly, 2 bad options or a damaged data folder, 3 a failed flush. Node-only.
 */
import type { EventLog, LimitsState, Operator } from 'peg-limits';
import { BITCOIN_READER, BitcoinRpc } from '../bitcoin/index.js';
import {
  dataAlertCursors,
  type OpenJournalFile,
  openDataLog,
  StoreError,
} from '../data-folder/index.js';
import { type RunningServer, type ServerOptions, startServer } from '../node-http/index.js';
import { type CommandLogger, createLogger, LoggerUnavailable, redactUrl } from '../ops/index.js';
import { openPgLog, PgLogError, pgAlertCursors } from '../postgres/index.js';
import {
  type ClarityCodec,
  dataBlockMemory,
  isPrivateAddress,
  pgBlockMemory,
  STACKS_NODE_OPERATOR,
  StacksRpc,
} from '../stacks/index.js';
import { loadConfig, type ServerConfig } from './config.js';
import { capHeapGrowth } from './heap.js';
import { fail, positive, type ServeValues } from './options.js';
import {
  checkAdminToken,
  describeOperators,
  type ObserverFlags,
  type Settings,
} from './settings.js';

/** Hooks for tests. */
export interface CommandHooks {
  readonly openJournalFile?: OpenJournalFile | undefined;
}

/** Runs `peg-limits serve` with its settings: returns once the server listens. */
export async function serve(settings: Settings, hooks: CommandHooks): Promise<void> {
  const { values, str, port, limits, cors, cacheMaxAge, alertUrls, postgres, stores, adminToken } =
    settings;
  const { configFile, observer, codec, reserved, config, alertSecret, bitcoin } = settings;
  const logger = await loggerFrom(values);
  const log = (line: string) => logger.message(line);
  capHeapGrowth();
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
      cacheMaxAge,
      stacksObserver:
        observer === undefined || codec === undefined
          ? undefined
          : observerOptions(observer, codec, config, postgres, dir, values),
      reserves:
        bitcoin === undefined
          ? undefined
          : {
              rpc: new BitcoinRpc({ url: bitcoin.url, cookieFile: bitcoin.cookieFile }),
              descriptors: bitcoin.descriptors,
            },
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
  if (bitcoin !== undefined)
    log(
      `reserves reader: scantxoutset through ${redactUrl(bitcoin.url, { query: true })} after each burn block, of ${bitcoin.descriptors.length > 0 ? `${bitcoin.descriptors.length} descriptor(s) given` : "the signers' wallets of the registry's keys"}, as the operator ${BITCOIN_READER.name} (chain)`,
    );
  handleSignals(server, log, { configFile, reserved, adminToken, operators });
  log(
    `operators: ${describeOperators(operators.now, adminToken)}${observer === undefined ? '' : `, ${STACKS_NODE_OPERATOR} (chain) for the stacks observer`}`,
  );
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
        snapshotEveryBatches: stores.snapshotEvery,
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
