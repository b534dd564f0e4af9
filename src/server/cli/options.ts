/**
 * The command's options as one table: it builds both the parser of `peg-limits serve` (and
 * `migrate-journal`, which reads the same) and the usage text, so that an option cannot be
 * taken without being told, or told without being taken. Also how the command stops on bad
 * input (exit code 2). Node-only.
 */
import { parseArgs } from 'node:util';
import { MIN_TOKEN_LENGTH } from '../../internal.js';
import { DEFAULT_SNAPSHOT_EVERY } from '../data-folder/index.js';
import { DEFAULT_SERVER_LIMITS as L, type ServerLimits } from '../node-http/index.js';
import { DEFAULT_KEEP_BATCHES, DEFAULT_PG_SNAPSHOT_EVERY } from '../postgres/index.js';
import { MAINNET_REGISTRY } from '../stacks/index.js';

/** One option of `peg-limits serve`: how it is parsed and how the usage text tells it. */
interface CommandOption {
  /** Its name, without the dashes. */
  readonly name: string;
  readonly type: 'string' | 'boolean';
  /** Taken more than once. */
  readonly multiple?: boolean;
  /** A one-letter alias. */
  readonly short?: string;
  /** What follows the name in the usage text: its value's form or its default. */
  readonly shown?: string;
  /**
   * The connection limit it sets, given in seconds when `scale` is 1000 (milliseconds in
   * the limits); its default, shown in the usage text, is the limit's.
   */
  readonly limit?: { readonly field: keyof ServerLimits; readonly scale?: number };
  /** The lines that tell it; none: it is not listed (`--help`). */
  readonly help: ReadonlyArray<string>;
}

/** The options of `peg-limits serve`, in the order the usage text lists them. */
export const SERVE_OPTIONS: ReadonlyArray<CommandOption> = [
  { name: 'host', type: 'string', shown: '127.0.0.1', help: ['address to listen on'] },
  { name: 'port', type: 'string', shown: '8080', help: ['port (0 picks a free one)'] },
  {
    name: 'config',
    type: 'string',
    shown: 'file.json',
    help: [
      'limits, history, throttle profile and keys of an empty log; the',
      'operators and their scopes (re-read on SIGHUP), chainBounds and',
      'loosening',
    ],
  },
  {
    name: 'data',
    type: 'string',
    shown: './peg-limits-data',
    help: ['the data folder (snapshot.json and journal.jsonl)'],
  },
  {
    name: 'store',
    type: 'string',
    shown: 'postgres://…',
    help: [
      'share the event log with other replicas on PostgreSQL instead',
      '(also PEG_LIMITS_STORE); a primary and its standbys: list them,',
      'postgres://u@db1,db2/limits?target_session_attrs=read-write',
    ],
  },
  {
    name: 'snapshot-every',
    type: 'string',
    shown: 'N',
    help: [
      `journaled events between two snapshots (default ${DEFAULT_SNAPSHOT_EVERY});`,
      `with --store, batches between two snapshot rows (default ${DEFAULT_PG_SNAPSHOT_EVERY})`,
    ],
  },
  {
    name: 'keep-batches',
    type: 'string',
    shown: String(DEFAULT_KEEP_BATCHES),
    help: ['with --store: batch rows kept behind the newest snapshot'],
  },
  {
    name: 'connect-timeout',
    type: 'string',
    shown: '15',
    help: ['with --store: seconds start-up waits for the database'],
  },
  {
    name: 'header-timeout',
    type: 'string',
    limit: { field: 'headersTimeoutMs', scale: 1000 },
    help: ["seconds for a client to send a request's headers"],
  },
  {
    name: 'request-timeout',
    type: 'string',
    limit: { field: 'requestTimeoutMs', scale: 1000 },
    help: ['seconds for a client to send a whole request'],
  },
  {
    name: 'keep-alive-timeout',
    type: 'string',
    limit: { field: 'keepAliveTimeoutMs', scale: 1000 },
    help: ['seconds an idle kept-alive connection stays open'],
  },
  {
    name: 'max-connections',
    type: 'string',
    limit: { field: 'maxConnections' },
    help: ['connections open at once'],
  },
  {
    name: 'max-header-size',
    type: 'string',
    limit: { field: 'maxHeaderBytes' },
    help: ['bytes of request line and headers'],
  },
  {
    name: 'max-pipelined',
    type: 'string',
    limit: { field: 'maxPipelined' },
    help: ['unanswered requests one connection may queue'],
  },
  {
    name: 'max-streams',
    type: 'string',
    limit: { field: 'maxStreams' },
    help: ['GET /events streams open at once'],
  },
  {
    name: 'heartbeat',
    type: 'string',
    limit: { field: 'heartbeatMs', scale: 1000 },
    help: ['seconds between GET /events heartbeat comments'],
  },
  {
    name: 'linger-time',
    type: 'string',
    limit: { field: 'lingerMs', scale: 1000 },
    help: [
      "seconds an early answer's connection is drained before it",
      'is closed (so the client reads the answer, not a reset)',
    ],
  },
  {
    name: 'linger-bytes',
    type: 'string',
    limit: { field: 'lingerBytes' },
    help: ['bytes drained at most after an early answer'],
  },
  {
    name: 'cors-origin',
    type: 'string',
    multiple: true,
    shown: 'URL',
    help: [
      "let only this origin's pages call the public endpoints (repeatable;",
      'default: any origin)',
    ],
  },
  { name: 'no-cors', type: 'boolean', help: ['no CORS headers at all'] },
  {
    name: 'cache-max-age',
    type: 'string',
    shown: 'SECONDS',
    help: [
      'how long an HTTP cache may serve a public read without asking',
      'again (default 0: it asks each time, and gets a 304 when unchanged)',
    ],
  },
  {
    name: 'no-metrics',
    type: 'boolean',
    help: ['no GET /metrics (it needs the prom-client package otherwise)'],
  },
  {
    name: 'alert-url',
    type: 'string',
    multiple: true,
    shown: 'URL',
    help: [
      'POST an alert there for every change that is not chain traffic',
      '(repeatable); delivery resumes after a restart',
    ],
  },
  {
    name: 'alert-secret',
    type: 'string',
    shown: 'SECRET',
    help: [
      'sign each alert (Peg-Limits-Signature), at least 22 characters',
      '(also PEG_LIMITS_ALERT_SECRET)',
    ],
  },
  {
    name: 'audit-repair',
    type: 'boolean',
    help: [
      'start even when the audit trail does not link up, with a new',
      'chain whose first record says where and why it broke',
    ],
  },
  {
    name: 'stacks-observer',
    type: 'string',
    shown: 'HOST:PORT',
    help: [
      "a second listener for a Stacks node's event observer (POST",
      "/new_block): the registry's withdrawals and rejections, and the",
      'burn heights, fed as the operator stacks-node (chain scope);',
      'loopback or private addresses only (needs @stacks/transactions)',
    ],
  },
  {
    name: 'stacks-observer-public',
    type: 'boolean',
    help: ['let --stacks-observer listen on any address (it takes no', 'credentials)'],
  },
  {
    name: 'sbtc-registry',
    type: 'string',
    shown: 'CONTRACT',
    help: ["the registry contract read (default mainnet's", `${MAINNET_REGISTRY})`],
  },
  {
    name: 'stacks-rpc',
    type: 'string',
    shown: 'URL',
    help: [
      "the same node's RPC (http://host:20443): the first block starts",
      "from the node's own state (the requests of the retained history,",
      'the sBTC supply), and the supply follows it; without it, the',
      'window stays incomplete (no room, withdrawals refused) until it',
      'holds only blocks the observer saw',
    ],
  },
  {
    name: 'stacks-rpc-retry',
    type: 'string',
    shown: 'SECONDS',
    help: [
      "while starting from the node's state fails, the least time",
      'between two tries, each at a block (default 10)',
    ],
  },
  {
    name: 'stacks-history-complete',
    type: 'boolean',
    help: [
      "the node and the service started together from the registry's",
      'deployment (a devnet, a test): complete from the first block',
    ],
  },
  {
    name: 'bitcoin-rpc',
    type: 'string',
    shown: 'URL',
    help: [
      "Bitcoin Core's JSON-RPC (http://user:password@host:8332): after",
      "each burn block, the BTC that backs the peg (the signers' wallets",
      'of every aggregate key the registry has had, or',
      '--reserves-descriptor) is read with scantxoutset and applied as',
      'reservesObserved; a pegIntegritySet turns the check on',
    ],
  },
  {
    name: 'bitcoin-rpc-cookie',
    type: 'string',
    shown: 'FILE',
    help: ["Bitcoin Core's cookie file (<datadir>/.cookie) for --bitcoin-rpc"],
  },
  {
    name: 'reserves-descriptor',
    type: 'string',
    multiple: true,
    shown: 'DESC',
    help: [
      "an output descriptor to scan instead of the registry's keys",
      '(repeatable), for --bitcoin-rpc',
    ],
  },
  { name: 'quiet', type: 'boolean', help: ['no request log'] },
  {
    name: 'log-format',
    type: 'string',
    shown: 'text',
    help: ['text lines, or json: one JSON object per line (needs pino)'],
  },
  { name: 'help', type: 'boolean', short: 'h', help: [] },
];

// The column the help starts at. A name and value that fill it are followed by one space;
// longer ones put the help on the next line.
const HELP_COLUMN = 28;

function usageOf(option: CommandOption): string[] {
  const limit = option.limit;
  const shown = limit === undefined ? option.shown : String(L[limit.field] / (limit.scale ?? 1));
  const left = `  --${option.name}${shown === undefined ? '' : ` ${shown}`}`;
  const [first = '', ...more] = option.help;
  const indent = ' '.repeat(HELP_COLUMN);
  const lines =
    left.length < HELP_COLUMN
      ? [`${left.padEnd(HELP_COLUMN)}${first}`]
      : left.length === HELP_COLUMN
        ? [`${left} ${first}`]
        : [left, `${indent}${first}`];
  return [...lines, ...more.map((line) => `${indent}${line}`)];
}

/** The command's usage text. */
export const USAGE = `usage: peg-limits serve [options]
       peg-limits token [--json]
       peg-limits audit verify --data DIR | --store postgres://…
       peg-limits migrate-journal --data DIR --store postgres://… [--config file.json]

  token                     print a new operator token and its tokenHash (for --config
                            operators, or as PEG_LIMITS_ADMIN_TOKEN); nothing is stored
  audit verify              recompute the audit trail's chain: exit 0 and the count of
                            records, or 1 naming the first position where it breaks

${SERVE_OPTIONS.filter((o) => o.help.length > 0)
  .flatMap(usageOf)
  .join('\n')}

Serves the operator dashboard at GET /, GET /limits, GET /limits/{account} and its checks,
GET /window, POST /start_throttle, GET /openapi.json, GET /healthz, GET /readyz and
GET /metrics.
POST /admin/events and /admin/changes are on when --config lists operators or
PEG_LIMITS_ADMIN_TOKEN is set (the operator admin, with every scope; at least
${MIN_TOKEN_LENGTH} characters: make one with peg-limits token).`;

/** Stops the command on bad input: the message on stderr, exit code 2. */
export function fail(message: string): never {
  process.stderr.write(`peg-limits: ${message}\n`);
  process.exit(2);
}

/** What `peg-limits serve` was given, by option name. */
export type ServeValues = Readonly<Record<string, string | boolean | string[] | undefined>>;

/** Parses the options of `peg-limits serve` (stops the command on an unknown one). */
export function parseServeArgs(args: ReadonlyArray<string>): ServeValues {
  try {
    return parseArgs({
      args: [...args],
      options: Object.fromEntries(
        SERVE_OPTIONS.map((o) => [
          o.name,
          {
            type: o.type,
            ...(o.multiple === true ? { multiple: true } : {}),
            ...(o.short === undefined ? {} : { short: o.short }),
          },
        ]),
      ),
      strict: true,
    }).values as ServeValues;
  } catch (e) {
    fail(`${(e as Error).message}\n${USAGE}`);
  }
}

/**
 * The connections' limits the options set, each a positive number (seconds become
 * milliseconds), checked in the table's order; the defaults for the others.
 */
export function connectionLimitsOf(values: ServeValues): ServerLimits {
  const limits: Record<string, number> = { ...L };
  for (const { name, limit } of SERVE_OPTIONS)
    if (limit !== undefined)
      limits[limit.field] = positive(
        name,
        values[name] as string | undefined,
        L[limit.field],
        limit.scale,
      );
  return limits as unknown as ServerLimits;
}

/** A positive number of `--name` (`scale` times it), or `fallback` when not given. */
export function positive(
  name: string,
  value: string | undefined,
  fallback: number,
  scale = 1,
): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) fail(`--${name} must be a positive number, got ${value}`);
  return Math.round(n * scale);
}
