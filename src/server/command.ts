/**
 * The `peg-limits serve` command as a function, so that it can be run with an injected
 * journal file. Exit codes: 0 stopped cleanly, 2 bad options or a damaged data folder,
 * 3 a failed flush.
 */
import { parseArgs } from 'node:util';
import {
  type EventLog,
  generateOperatorToken,
  hashOperatorToken,
  LimitsError,
  type LimitsState,
  type Operator,
} from 'peg-limits';
import { ADMIN_OPERATOR, MIN_TOKEN_LENGTH } from '../internal.js';
import { isAlertUrl, MIN_ALERT_SECRET_LENGTH } from './alerts.js';
import { auditVerify } from './audit-command.js';
import {
  DEFAULT_SERVER_CONFIG,
  loadConfig,
  type ServerConfig,
  serverConfigFrom,
} from './config.js';
import { dataAlertCursors } from './data-audit.js';
import {
  DEFAULT_SNAPSHOT_EVERY,
  type OpenJournalFile,
  openDataLog,
  StoreError,
} from './data-log.js';
import { type CommandLogger, createLogger, LoggerUnavailable } from './logger.js';
import { pgAlertCursors } from './pg-audit.js';
import {
  DEFAULT_KEEP_BATCHES,
  DEFAULT_PG_SNAPSHOT_EVERY,
  migrateToPg,
  openPgLog,
  PgLogError,
} from './pg-log.js';
import { redactAlertUrl, redactStore, redactUrl } from './redact.js';
import { DEFAULT_SERVER_LIMITS, type ServerLimits, startServer } from './serve.js';
import {
  dataBlockMemory,
  isPrivateAddress,
  loadClarityCodec,
  MAINNET_REGISTRY,
  pgBlockMemory,
  STACKS_NODE_CONFIRMED_OPERATOR,
  STACKS_NODE_OPERATOR,
} from './stacks-observer.js';
import { StacksRpc } from './stacks-rpc.js';

const L = DEFAULT_SERVER_LIMITS;

/** The command's usage text. */
export const USAGE = `usage: peg-limits serve [options]
       peg-limits token [--json]
       peg-limits audit verify --data DIR | --store postgres://…
       peg-limits migrate-journal --data DIR --store postgres://… [--config file.json]

  token                     print a new operator token and its tokenHash (for --config
                            operators, or as PEG_LIMITS_ADMIN_TOKEN); nothing is stored
  audit verify              recompute the audit trail's chain: exit 0 and the count of
                            records, or 1 naming the first position where it breaks

  --host 127.0.0.1          address to listen on
  --port 8080               port (0 picks a free one)
  --config file.json        limits, history, throttle profile and keys of an empty log; the
                            operators and their scopes (re-read on SIGHUP), chainBounds and
                            loosening
  --data ./peg-limits-data  the data folder (snapshot.json and journal.jsonl)
  --store postgres://…      share the event log with other replicas on PostgreSQL instead
                            (also PEG_LIMITS_STORE); a primary and its standbys: list them,
                            postgres://u@db1,db2/limits?target_session_attrs=read-write
  --snapshot-every N        journaled events between two snapshots (default ${DEFAULT_SNAPSHOT_EVERY});
                            with --store, batches between two snapshot rows (default ${DEFAULT_PG_SNAPSHOT_EVERY})
  --keep-batches ${DEFAULT_KEEP_BATCHES}      with --store: batch rows kept behind the newest snapshot
  --connect-timeout 15      with --store: seconds start-up waits for the database
  --header-timeout ${L.headersTimeoutMs / 1000}        seconds for a client to send a request's headers
  --request-timeout ${L.requestTimeoutMs / 1000}      seconds for a client to send a whole request
  --keep-alive-timeout ${L.keepAliveTimeoutMs / 1000}    seconds an idle kept-alive connection stays open
  --max-connections ${L.maxConnections}    connections open at once
  --max-header-size ${L.maxHeaderBytes}   bytes of request line and headers
  --max-pipelined ${L.maxPipelined}        unanswered requests one connection may queue
  --max-streams ${L.maxStreams}        GET /events streams open at once
  --heartbeat ${L.heartbeatMs / 1000}           seconds between GET /events heartbeat comments
  --linger-time ${L.lingerMs / 1000}          seconds an early answer's connection is drained before it
                            is closed (so the client reads the answer, not a reset)
  --linger-bytes ${L.lingerBytes} bytes drained at most after an early answer
  --cors-origin URL         let only this origin's pages call the public endpoints (repeatable;
                            default: any origin)
  --no-cors                 no CORS headers at all
  --no-metrics              no GET /metrics (it needs the prom-client package otherwise)
  --alert-url URL           POST an alert there for every change that is not chain traffic
                            (repeatable); delivery resumes after a restart
  --alert-secret SECRET     sign each alert (Peg-Limits-Signature), at least 22 characters
                            (also PEG_LIMITS_ALERT_SECRET)
  --audit-repair            start even when the audit trail does not link up, with a new
                            chain whose first record says where and why it broke
  --stacks-observer HOST:PORT
                            a second listener for a Stacks node's event observer (POST
                            /new_block): the registry's withdrawals and rejections, and the
                            burn heights, fed as the operator stacks-node (chain scope);
                            loopback or private addresses only (needs @stacks/transactions)
  --stacks-observer-public  let --stacks-observer listen on any address (it takes no
                            credentials)
  --sbtc-registry CONTRACT  the registry contract read (default mainnet's
                            ${MAINNET_REGISTRY})
  --stacks-rpc URL          the same node's RPC (http://host:20443): the first block starts
                            from the node's own state (the requests of the retained history,
                            the sBTC supply), and the supply follows it; without it, the
                            window stays incomplete (no room, withdrawals refused) until it
                            holds only blocks the observer saw
  --stacks-rpc-retry SECONDS while starting from the node's state fails, the least time
                            between two tries, each at a block (default 10)
  --stacks-history-complete the node and the service started together from the registry's
                            deployment (a devnet, a test): complete from the first block
  --quiet                   no request log
  --log-format text         text lines, or json: one JSON object per line (needs pino)

Serves the operator dashboard at GET /, GET /limits, GET /limits/{account} and its checks,
GET /window, POST /start_throttle, GET /openapi.json, GET /healthz, GET /readyz and
GET /metrics.
POST /admin/events and /admin/changes are on when --config lists operators or
PEG_LIMITS_ADMIN_TOKEN is set (the operator admin, with every scope; at least
${MIN_TOKEN_LENGTH} characters: make one with peg-limits token).`;

/** Hooks for tests. */
export interface CommandHooks {
  readonly openJournalFile?: OpenJournalFile | undefined;
}

function fail(message: string): never {
  process.stderr.write(`peg-limits: ${message}\n`);
  process.exit(2);
}

function positive(name: string, value: string | undefined, fallback: number, scale = 1): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) fail(`--${name} must be a positive number, got ${value}`);
  return Math.round(n * scale);
}

// Moves a data folder's state into an empty database (its snapshot, at its batch count).
async function migrate(dir: string, url: string, initial: LimitsState): Promise<void> {
  try {
    const data = await openDataLog({ dir, initial });
    const moved = await migrateToPg(url, data.state, data.position);
    await data.close();
    process.stdout.write(
      `migrated ${dir} into the database: a snapshot of ${moved.seq} batches (${moved.bytes} bytes); start the replicas with --store\n`,
    );
  } catch (e) {
    if (e instanceof StoreError || e instanceof PgLogError) fail(e.message);
    fail(`cannot migrate: ${(e as Error).message}`);
  }
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
  if (command === 'token') {
    printToken(rest);
    return;
  }
  if (command === 'audit') {
    await audit(rest);
    return;
  }
  if (command !== 'serve' && command !== 'migrate-journal')
    fail(`unknown command "${command}"\n${USAGE}`);
  let values: Record<string, string | boolean | string[] | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...rest],
      options: {
        host: { type: 'string' },
        port: { type: 'string' },
        config: { type: 'string' },
        data: { type: 'string' },
        store: { type: 'string' },
        'snapshot-every': { type: 'string' },
        'keep-batches': { type: 'string' },
        'connect-timeout': { type: 'string' },
        'header-timeout': { type: 'string' },
        'request-timeout': { type: 'string' },
        'keep-alive-timeout': { type: 'string' },
        'max-connections': { type: 'string' },
        'max-header-size': { type: 'string' },
        'max-pipelined': { type: 'string' },
        'max-streams': { type: 'string' },
        heartbeat: { type: 'string' },
        'linger-time': { type: 'string' },
        'linger-bytes': { type: 'string' },
        'cors-origin': { type: 'string', multiple: true },
        'no-cors': { type: 'boolean' },
        'no-metrics': { type: 'boolean' },
        'audit-repair': { type: 'boolean' },
        'alert-url': { type: 'string', multiple: true },
        'alert-secret': { type: 'string' },
        quiet: { type: 'boolean' },
        'log-format': { type: 'string' },
        'stacks-observer': { type: 'string' },
        'stacks-observer-public': { type: 'boolean' },
        'sbtc-registry': { type: 'string' },
        'stacks-rpc': { type: 'string' },
        'stacks-history-complete': { type: 'boolean' },
        'stacks-rpc-retry': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (e) {
    fail(`${(e as Error).message}\n${USAGE}`);
  }
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const str = (k: string) => values[k] as string | undefined;
  const port = str('port') === undefined ? 8080 : Number(str('port'));
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    fail(`--port must be 0 to 65535, got ${str('port')}`);
  const limits: ServerLimits = {
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
  const origins = (values['cors-origin'] as string[] | undefined) ?? [];
  if (values['no-cors'] === true && origins.length > 0)
    fail('--no-cors and --cors-origin contradict each other');
  for (const origin of origins) {
    if (!/^https?:\/\/[^/\s]+$/.test(origin))
      fail(`--cors-origin takes an origin such as https://bridge.example (no path), got ${origin}`);
  }
  const cors = values['no-cors'] === true ? false : origins.length > 0 ? origins : '*';
  const alertUrls = (values['alert-url'] as string[] | undefined) ?? [];
  for (const url of alertUrls)
    if (!isAlertUrl(url)) fail(`--alert-url takes an http(s) URL, got ${redactAlertUrl(url)}`);
  const postgres = str('store') ?? (process.env.PEG_LIMITS_STORE || undefined);
  if (postgres !== undefined && !/^postgres(ql)?:\/\//.test(postgres))
    fail(
      `--store takes a PostgreSQL connection string (postgres://…), got ${redactStore(postgres)}`,
    );
  const snapshotEvery = positive(
    'snapshot-every',
    str('snapshot-every'),
    postgres === undefined ? DEFAULT_SNAPSHOT_EVERY : DEFAULT_PG_SNAPSHOT_EVERY,
  );
  const keepBatches = positive('keep-batches', str('keep-batches'), DEFAULT_KEEP_BATCHES);
  const connectTimeoutMs = positive('connect-timeout', str('connect-timeout'), 15_000, 1000);
  const adminToken = process.env.PEG_LIMITS_ADMIN_TOKEN || undefined;
  if (adminToken !== undefined && adminToken.length < MIN_TOKEN_LENGTH)
    fail(
      `PEG_LIMITS_ADMIN_TOKEN has ${adminToken.length} characters; an operator token needs at least ${MIN_TOKEN_LENGTH} (128 bits): make one with \`peg-limits token\``,
    );
  const configFile = str('config');
  const observerAt = str('stacks-observer');
  const observerHost = observerAt?.replace(/:\d+$/, '') ?? '';
  const observerPort = Number(/:(\d{1,5})$/.exec(observerAt ?? '')?.[1] ?? Number.NaN);
  if (
    observerAt !== undefined &&
    (observerHost === '' || !(observerPort >= 0 && observerPort <= 65535))
  )
    fail(`--stacks-observer takes HOST:PORT (127.0.0.1:0 picks a port), got ${observerAt}`);
  if (
    observerAt !== undefined &&
    !isPrivateAddress(observerHost) &&
    values['stacks-observer-public'] !== true
  )
    fail(
      `--stacks-observer ${observerAt} is not a loopback or private address: the observer takes no credentials (a node sends none), so anyone who reaches it feeds the chain; pass --stacks-observer-public to listen there anyway`,
    );
  const registry = str('sbtc-registry') ?? MAINNET_REGISTRY;
  if (!/^S[A-Z0-9]{27,40}\.[a-zA-Z][a-zA-Z0-9-]{0,127}$/.test(registry))
    fail(`--sbtc-registry takes a contract (ADDRESS.name), got ${registry}`);
  const rpcUrl = str('stacks-rpc');
  if (rpcUrl !== undefined) {
    if (observerAt === undefined) fail('--stacks-rpc goes with --stacks-observer');
    let u: URL | undefined;
    try {
      u = new URL(rpcUrl);
    } catch {
      u = undefined;
    }
    if (u === undefined || (u.protocol !== 'http:' && u.protocol !== 'https:'))
      fail(`--stacks-rpc takes an http(s) URL, got ${redactUrl(rpcUrl, { query: true })}`);
  }
  if (values['stacks-history-complete'] === true && observerAt === undefined)
    fail('--stacks-history-complete goes with --stacks-observer');
  const codec =
    observerAt === undefined
      ? undefined
      : await loadClarityCodec().catch((e: unknown) => fail((e as Error).message));
  const decode = codec?.decode;
  const reserved = [
    ...(adminToken === undefined ? [] : [ADMIN_OPERATOR]),
    ...(observerAt === undefined ? [] : [STACKS_NODE_OPERATOR, STACKS_NODE_CONFIRMED_OPERATOR]),
  ];
  let config: ServerConfig;
  try {
    config =
      configFile === undefined
        ? serverConfigFrom(DEFAULT_SERVER_CONFIG, 'embedded configuration')
        : await loadConfig(configFile, reserved);
    checkAdminToken(config.operators, adminToken);
  } catch (e) {
    if (e instanceof LimitsError) fail(`invalid configuration: ${e.message}`);
    throw e;
  }
  const state = config.state;
  const alertSecret =
    str('alert-secret') ?? (process.env.PEG_LIMITS_ALERT_SECRET || undefined) ?? config.alertSecret;
  if (alertSecret !== undefined && alertSecret.length < MIN_ALERT_SECRET_LENGTH)
    fail(
      `--alert-secret has ${alertSecret.length} characters; it needs at least ${MIN_ALERT_SECRET_LENGTH} (128 bits): make one with \`peg-limits token\``,
    );

  if (command === 'migrate-journal') {
    if (postgres === undefined || str('data') === undefined)
      fail(`migrate-journal needs --data DIR and --store postgres://…\n${USAGE}`);
    await migrate(str('data')!, postgres, state);
    return;
  }
  const quiet = values.quiet === true;
  const format = str('log-format') ?? 'text';
  if (format !== 'text' && format !== 'json')
    fail(`--log-format takes text or json, got ${format}`);
  let logger: CommandLogger;
  try {
    logger = await createLogger(format, quiet);
  } catch (e) {
    if (e instanceof LoggerUnavailable) fail(e.message);
    throw e;
  }
  const log = (line: string) => logger.message(line);
  // Past `ulimit -f` a write must fail (EFBIG), not kill the process: the store cuts the
  // line back and answers 500.
  process.on('SIGXFSZ', () => undefined);
  // The command chooses the log; the server only serves from it.
  const opening = performance.now();
  const dir = str('data') ?? './peg-limits-data';
  let eventLog: EventLog;
  try {
    if (postgres !== undefined) {
      eventLog = await openPgLog({
        auditRepair: values['audit-repair'] === true,
        url: postgres,
        initial: state,
        snapshotEvery,
        keepBatches,
        connectTimeoutMs,
        logLine: log,
      });
      log(
        `opened the log on PostgreSQL at position ${eventLog.position} in ${(performance.now() - opening).toFixed(0)} ms`,
      );
    } else {
      const data = await openDataLog({
        dir,
        auditRepair: values['audit-repair'] === true,
        initial: state,
        snapshotEvery,
        logLine: log,
        openJournalFile: hooks.openJournalFile,
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
      eventLog = data;
    }
  } catch (e) {
    if (e instanceof StoreError || e instanceof PgLogError) fail(e.message);
    fail(`cannot start: ${(e as Error).message}`);
  }
  // The operators in force; SIGHUP swaps them for the file's, or keeps them when it fails.
  let operators = config.operators;
  const holding = (list: ReadonlyArray<Operator>) =>
    list.filter((o) => o.scopes.includes('limits')).length + (adminToken === undefined ? 0 : 1);
  if (config.loosening.quorum > holding(operators))
    log(
      `warning: loosening asks a quorum of ${config.loosening.quorum}, but only ${holding(operators)} operator(s) hold the limits scope${config.loosening.delayBlocks === null ? ': no change can apply' : ': changes apply by their delay only'}`,
    );
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer({
      log: eventLog,
      host: str('host') ?? '127.0.0.1',
      port,
      adminToken,
      operators: () => operators,
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
        observerAt === undefined || decode === undefined
          ? undefined
          : {
              host: observerHost.replace(/^\[|\]$/g, ''),
              port: observerPort,
              registry,
              decode,
              memory: postgres !== undefined ? pgBlockMemory(postgres) : dataBlockMemory(dir),
              keepBurnBlocks: config.chainBounds.maxReorgDepth + 6,
              rpc:
                rpcUrl === undefined || codec === undefined
                  ? undefined
                  : new StacksRpc({ url: rpcUrl, registry, codec }),
              historyComplete: values['stacks-history-complete'] === true,
              startRetryMs: positive('stacks-rpc-retry', str('stacks-rpc-retry'), 10_000, 1000),
            },
    });
  } catch (e) {
    await eventLog.close().catch(() => undefined);
    fail(`cannot start: ${(e as Error).message}`);
  }
  process.stdout.write(`listening on ${server.url}\n`);
  if (server.stacksObserver !== undefined) {
    process.stdout.write(`stacks observer on ${server.stacksObserver}\n`);
    if (!isPrivateAddress(observerHost))
      log(
        `warning: the stacks observer listens on ${observerHost}, which is not private: it takes no credentials, so anyone who reaches it feeds the chain (chain bounds still apply)`,
      );
  }
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
        operators = fresh.operators;
        log(
          `SIGHUP: operators reloaded from ${configFile}: ${describeOperators(operators, adminToken)}`,
        );
      })
      .catch((e: unknown) => {
        log(
          `warning: SIGHUP: the operators were not reloaded, the previous ones stay (${describeOperators(operators, adminToken)}): ${(e as Error).message}`,
        );
      });
  });
  log(
    `operators: ${describeOperators(operators, adminToken)}${observerAt === undefined ? '' : `, ${STACKS_NODE_OPERATOR} (chain) for the stacks observer`}`,
  );
}

// `peg-limits audit verify --data DIR | --store URL`.
async function audit(args: ReadonlyArray<string>): Promise<void> {
  let values: Record<string, string | boolean | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: [...args],
      options: { data: { type: 'string' }, store: { type: 'string' } },
      allowPositionals: true,
      strict: true,
    }));
  } catch (e) {
    fail(`${(e as Error).message}\n${USAGE}`);
  }
  const data = values.data as string | undefined;
  const store = (values.store as string | undefined) ?? (process.env.PEG_LIMITS_STORE || undefined);
  if (positionals.join(' ') !== 'verify' || (data === undefined) === (store === undefined))
    fail('usage: peg-limits audit verify --data DIR | --store postgres://…');
  try {
    const r = await auditVerify(data !== undefined ? { data } : { store: store! });
    (r.code === 0 ? process.stdout : process.stderr).write(
      r.code === 2 ? `peg-limits: ${r.out}\n` : `${r.out}\n`,
    );
    process.exitCode = r.code;
  } catch (e) {
    fail(`cannot read the audit trail: ${(e as Error).message}`);
  }
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

// `peg-limits token`: a new operator token and the hash to configure; nothing is stored.
function printToken(args: ReadonlyArray<string>): void {
  const json = args.includes('--json');
  const unknown = args.filter((a) => a !== '--json');
  if (unknown.length > 0) fail(`peg-limits token takes only --json, got ${unknown.join(' ')}`);
  const token = generateOperatorToken();
  const tokenHash = hashOperatorToken(token);
  process.stdout.write(
    json
      ? `${JSON.stringify({ token, tokenHash })}\n`
      : `token      ${token}\ntokenHash  ${tokenHash}\n\nGive the token to the operator (it is shown once); put the tokenHash in --config:\n  "operators": [{ "name": "…", "tokenHash": "${tokenHash}", "scopes": ["chain"] }]\n`,
  );
}
