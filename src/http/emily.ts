/**
 * Emily's private limits API, for the tools that write through it today (docs/operating.md,
 * "Coming from Emily"): `POST /limits`, `POST /limits/{account}`, `POST /throttle`,
 * `PATCH /throttle/activate|deactivate` and `POST|PUT /chainstate`, with Emily's bodies and
 * Emily's answers (`POST /new_block`, a feed's, is the server's own route). Each request
 * becomes an operator's batch decided at the service's port (`decideBatch`): the caller's
 * scopes, the chain bounds, a loosening that waits (202 with the pending change: the one
 * difference in kind from Emily), the trail and the alerts hold as for `POST /admin/events`.
 * Pure.
 */

import {
  describe,
  fail,
  joinPath,
  LimitsError,
  type LimitsErrorCode,
  pathInEvent,
} from '../core/errors.js';
import { heightFromJson, requireHeight } from '../core/heights.js';
import { hashThrottleSecret } from '../core/keys.js';
import {
  CAP_FIELDS,
  type Caps,
  type CapsInput,
  isAccountName,
  isRecord,
  MINT_FIELDS,
  REPORTED_CAP_FIELDS,
  rejectUnknownFields,
} from '../core/limits.js';
import type { BatchRefused } from '../core/operator-batch.js';
import type { LimitsEvent, LimitsState } from '../core/state.js';
import { configuredEntry, configuredLimits, getAccountLimits } from '../core/views.js';
import {
  accountOf,
  fromError,
  INVALID_ACCOUNT,
  json,
  MAX_THROTTLE_BODY,
  notJson,
  problem,
  readJson,
  readText,
} from './answers.js';
import type { BatchRoute, HttpRequest, HttpResponse } from './messages.js';
import { limitsResponse } from './reads.js';

/** The largest body of Emily's writes but `/new_block` (a Limits with its account entries). */
export const MAX_EMILY_BODY = 1024 * 1024;

/** A body turned into events (and what the answer needs of it), or the answer refusing it. */
type Read<T> =
  | {
      readonly ok: true;
      readonly events: ReadonlyArray<LimitsEvent>;
      readonly data: T;
      /** Where each event's caps stand in the body (`accountCaps.alice`), when they came from it. */
      readonly at?: ReadonlyArray<string> | undefined;
    }
  | { readonly ok: false; readonly response: HttpResponse };

type Params = Readonly<Record<string, string>>;

// A route of Emily's that writes for an operator: its body read and turned into events (or
// refused with what is wrong, where), the batch decided at the service's port as every
// operator's is, and a batch that applied answered in Emily's words. The caps are validated
// once, by the state, and a refusal of them is told at the body's own paths.
function emilyWrite<T>(
  read: (state: LimitsState, request: HttpRequest, params: Params) => Read<T>,
  answer: (after: LimitsState, data: T) => HttpResponse,
  refused: (outcome: BatchRefused) => HttpResponse | undefined = () => undefined,
): BatchRoute {
  return {
    read(state, request, params) {
      const r = read(state, request, params);
      if (!r.ok) return r;
      return {
        ok: true,
        events: r.events,
        applied: (after) => answer(after, r.data),
        refused: (outcome) => refused(outcome) ?? atBody(outcome, r.at),
      };
    },
  };
}

// The state's refusal of a body's caps, told where they stand in the body: event `i`'s
// `limits.pegCap` is `at[i]`'s `pegCap` (`accountCaps.alice.pegCap`), as a 400 of the body.
function atBody(
  outcome: BatchRefused,
  at: ReadonlyArray<string> | undefined,
): HttpResponse | undefined {
  const e = outcome.error;
  const base = e.event === undefined ? undefined : at?.[e.event];
  const inEvent = pathInEvent(e);
  if (outcome.by !== 'state' || base === undefined || inEvent === undefined) return undefined;
  // The event's `limits` stands for the body's caps themselves.
  const field =
    inEvent === 'limits' ? '' : inEvent.startsWith('limits.') ? inEvent.slice(7) : inEvent;
  return fromError(
    400,
    new LimitsError(e.code as LimitsErrorCode, e.message, joinPath(base, field)),
  );
}

// A body read as JSON, its decoding's LimitsError turned into a 400 with the field's path.
function fromBody<T>(
  request: HttpRequest,
  max: number,
  decode: (value: unknown) => {
    readonly events: ReadonlyArray<LimitsEvent>;
    readonly data: T;
    readonly at?: ReadonlyArray<string>;
  },
): Read<T> {
  const body = readJson(request, max);
  if (!body.ok) return body;
  try {
    return { ok: true, ...decode(body.value) };
  } catch (e) {
    if (e instanceof LimitsError) return { ok: false, response: fromError(400, e) };
    throw e;
  }
}

const LIMITS_FIELDS = [
  ...CAP_FIELDS,
  'availableToWithdraw',
  'availableToMint',
  'throttleModeInitiator',
  'accountCaps',
] as const;
const ACCOUNT_FIELDS = [...CAP_FIELDS, 'throttleModeInitiator'] as const;

// Emily's `throttleModeInitiator` in a body: null (or absent) asks throttle mode to end (in
// an account entry: nothing), the current initiator keeps it; any other name would start it,
// which only a throttle key may do.
function keepsThrottle(state: LimitsState, value: unknown, path: string): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value === 'string' && value === state.throttleModeInitiator) return true;
  return fail(
    'invalid_request',
    state.throttleModeInitiator === null
      ? `throttle mode is off, and only a throttle key starts it (POST /start_throttle): send null, got ${describe(value)}`
      : `throttle mode is on, started by ${JSON.stringify(state.throttleModeInitiator)}: send that name to keep it or null to end it, got ${describe(value)}`,
    path,
  );
}

function requireObject(
  value: unknown,
  what: string,
  path: string,
): Readonly<Record<string, unknown>> {
  if (!isRecord(value))
    fail('invalid_request', `expected ${what} (an object), got ${describe(value)}`, path);
  return value;
}

// The caps of a body as a limits event takes them: every field, an absent one null (Emily
// sets them all), for the state to validate as it validates every event.
// `rollingWithdrawalCapShare` and the mint window's three fields are this service's own, which
// Emily's clients neither know nor send: a share left out stays set (while the body keeps a
// window for it to apply to), and a mint window field left out stays as configured; only an
// explicit null removes one. So Emily's tools never drop them unawares.
function capsOf(body: Readonly<Record<string, unknown>>, configured: Caps | undefined): CapsInput {
  const caps: Record<string, unknown> = {};
  for (const f of CAP_FIELDS) caps[f] = body[f] ?? null;
  if (!('rollingWithdrawalCapShare' in body) && caps.rollingWithdrawalBlocks !== null)
    caps.rollingWithdrawalCapShare = configured?.rollingWithdrawalCapShare ?? null;
  for (const f of MINT_FIELDS) if (!(f in body)) caps[f] = configured?.[f] ?? null;
  return caps as CapsInput;
}

// Not settable, ignored as Emily ignores them, but a number when given: what GET /limits
// reports may be sent back as it is.
function ignoredRoom(body: Readonly<Record<string, unknown>>, field: string): void {
  const value = body[field];
  if (value !== undefined && value !== null && (typeof value !== 'bigint' || value < 0n))
    fail(
      'invalid_amount',
      `${field} is not settable and is ignored, but must be null or a non-negative integer, got ${describe(value)}`,
      field,
    );
}

// Emily's AccountLimits: its six caps, each absent or null for none (and the share, this
// service's own, kept when left out).
function accountCaps(state: LimitsState, account: string, value: unknown, path: string): CapsInput {
  const body = requireObject(value, "Emily's AccountLimits", path);
  rejectUnknownFields(body, ACCOUNT_FIELDS, path);
  keepsThrottle(state, body.throttleModeInitiator, joinPath(path, 'throttleModeInitiator'));
  return capsOf(body, configuredEntry(state, account));
}

/**
 * The events of Emily's `POST /limits` body: Emily's six global caps as given (absent or
 * null: none; the share kept when left out; `limitsSet`, which ends throttle mode, or `limitsUpdated` when the body names the
 * current initiator), then each listed account's entry replaced (`accountLimitsSet`).
 * `availableToWithdraw` is not settable and is ignored, as Emily ignores it. Where each
 * event's caps stand in the body comes with them.
 */
function limitsBodyEvents(
  state: LimitsState,
  value: unknown,
): { events: ReadonlyArray<LimitsEvent>; at: ReadonlyArray<string> } {
  const body = requireObject(value, "Emily's Limits", '');
  rejectUnknownFields(body, LIMITS_FIELDS, '');
  ignoredRoom(body, 'availableToWithdraw');
  ignoredRoom(body, 'availableToMint');
  const keep = keepsThrottle(state, body.throttleModeInitiator, 'throttleModeInitiator');
  const caps = capsOf(body, configuredLimits(state));
  const entries = body.accountCaps ?? {};
  const accounts = requireObject(entries, 'a map of account names to AccountLimits', 'accountCaps');
  const events: LimitsEvent[] = [{ type: keep ? 'limitsUpdated' : 'limitsSet', limits: caps }];
  const at = [''];
  for (const [name, entry] of Object.entries(accounts)) {
    const path = `accountCaps.${name}`;
    if (!isAccountName(name))
      fail(
        'invalid_account',
        'an account name has 1 to 256 characters without control characters',
        path,
      );
    events.push({
      type: 'accountLimitsSet',
      account: name,
      limits: accountCaps(state, name, entry, path),
    });
    at.push(path);
  }
  return { events, at };
}

// The caps an account's limits report, every one null: its limits once its entry is removed.
const NO_REPORTED_CAPS = Object.fromEntries(
  [...REPORTED_CAP_FIELDS, 'throttleModeInitiator', ...MINT_FIELDS].map((f) => [f, null]),
);

// An account's limits as Emily answers them: its entry, or every field null once removed.
function accountAnswer(state: LimitsState, account: string): HttpResponse {
  return json(
    201,
    getAccountLimits(state, account) ?? {
      ...NO_REPORTED_CAPS,
      throttleModeInitiator: state.throttleModeInitiator,
    },
  );
}

/** `POST /limits` (scope limits): the global caps and the listed entries; 201 with the Limits. */
export const SET_LIMITS = emilyWrite(
  (state, request) =>
    fromBody(request, MAX_EMILY_BODY, (v) => ({ ...limitsBodyEvents(state, v), data: null })),
  (after) => ({ ...limitsResponse(after), status: 201 }),
);

/** `POST /limits/{account}` (scope limits): the entry replaced (all null removes it); 201 with it. */
export const SET_ACCOUNT_LIMITS = emilyWrite((state, request, params) => {
  const account = accountOf(params.account);
  if (account === undefined)
    return { ok: false, response: problem(400, 'invalid_account', INVALID_ACCOUNT) };
  return fromBody(request, MAX_EMILY_BODY, (v) => ({
    events: [{ type: 'accountLimitsSet', account, limits: accountCaps(state, account, v, '') }],
    data: account,
    at: [''],
  }));
}, accountAnswer);

const NO_CONTENT = (status: number): HttpResponse => ({
  status,
  headers: { 'cache-control': 'no-store' },
  body: '',
});

/** `POST /throttle` `{ name, secret }` (scope keys): registers a key (its salted hash is kept); 201. */
export const ADD_THROTTLE_KEY = emilyWrite(
  (_state, request) =>
    fromBody(request, MAX_THROTTLE_BODY, (value) => {
      const body = requireObject(value, "Emily's ThrottleKey { name, secret }", '');
      rejectUnknownFields(body, ['name', 'secret'], '');
      if (typeof body.secret !== 'string')
        fail(
          'invalid_request',
          `expected the key's secret as a string, got ${describe(body.secret)}`,
          'secret',
        );
      let secretHash: string;
      try {
        // The one draw of chance a route makes: the salt. The event keeps the hash it made.
        secretHash = hashThrottleSecret(body.secret);
      } catch (e) {
        throw new LimitsError('weak_secret', (e as Error).message, 'secret');
      }
      return {
        events: [{ type: 'throttleKeyAdded', name: body.name as string, secretHash }],
        data: null,
      };
    }),
  () => NO_CONTENT(201),
);

// Emily addresses a key by its Argon2 hash, which this service never has (it keeps its own
// salted hash): the key is named instead.
function keyName(
  request: HttpRequest,
): { ok: true; name: unknown } | { ok: false; response: HttpResponse } {
  if (notJson(request) === undefined) {
    const body = readJson(request, MAX_THROTTLE_BODY);
    return body.ok ? { ok: true, name: body.value } : body;
  }
  const text = readText(request, MAX_THROTTLE_BODY);
  return text.ok ? { ok: true, name: text.text.trim() } : text;
}

// An unknown key is Emily's 404, not a conflict.
const keyNotFound = (outcome: BatchRefused) =>
  outcome.error.code === 'unknown_key' ? fromError(404, outcome.error) : undefined;

/**
 * `PATCH /throttle/activate` and `/deactivate` (scope keys): the key's name (a JSON string,
 * as Emily's client sends its body, or plain text) reactivated or revoked; 204.
 */
export function keyStateBatch(op: 'activate' | 'deactivate'): BatchRoute {
  return emilyWrite(
    (_state, request) => {
      const read = keyName(request);
      if (!read.ok) return read;
      if (typeof read.name !== 'string' || read.name === '')
        return {
          ok: false,
          response: problem(
            400,
            'invalid_request',
            `expected the key's name as a JSON string (this service names keys: it keeps no Argon2 hash of Emily's), got ${describe(read.name)}`,
          ),
        };
      return {
        ok: true,
        events: [
          {
            type: op === 'activate' ? 'throttleKeyReactivated' : 'throttleKeyRevoked',
            name: read.name,
          },
        ],
        data: null,
      };
    },
    () => NO_CONTENT(204),
    keyNotFound,
  );
}

const CHAINSTATE_FIELDS = ['stacksBlockHeight', 'stacksBlockHash', 'bitcoinBlockHeight'] as const;

/** Emily's Chainstate as it was sent: the Stacks block and the Bitcoin height that is the tip. */
interface Chainstate {
  readonly stacksBlockHeight: number;
  readonly stacksBlockHash: string;
  readonly bitcoinBlockHeight: number;
}

function chainstateOf(value: unknown): Chainstate {
  const body = requireObject(value, "Emily's Chainstate", '');
  rejectUnknownFields(body, CHAINSTATE_FIELDS, '');
  if (body.bitcoinBlockHeight === undefined || body.bitcoinBlockHeight === null)
    fail(
      'invalid_request',
      'bitcoinBlockHeight is the tip this sets: it is required',
      'bitcoinBlockHeight',
    );
  if (typeof body.stacksBlockHash !== 'string')
    fail(
      'invalid_request',
      `expected the Stacks block's hash, got ${describe(body.stacksBlockHash)}`,
      'stacksBlockHash',
    );
  return {
    stacksBlockHeight: requireHeight(heightFromJson(body.stacksBlockHeight), 'stacksBlockHeight'),
    stacksBlockHash: body.stacksBlockHash,
    bitcoinBlockHeight: requireHeight(
      heightFromJson(body.bitcoinBlockHeight),
      'bitcoinBlockHeight',
    ),
  };
}

// What a Chainstate does to the tip: a block above it, a reorganization below it, nothing at it.
function tipEvents(state: LimitsState, height: number): ReadonlyArray<LimitsEvent> {
  if (state.tip === null || height > state.tip) return [{ type: 'blockConnected', height }];
  if (height < state.tip) return [{ type: 'chainReorganized', height }];
  return [];
}

/**
 * `POST /chainstate` and `PUT /chainstate` (scope chain): `bitcoinBlockHeight` becomes the
 * tip, under the chain bounds; 201 with the Chainstate.
 */
export const CHAINSTATE = emilyWrite(
  (state, request) =>
    fromBody(request, MAX_THROTTLE_BODY, (value) => {
      const chainstate = chainstateOf(value);
      return { events: tipEvents(state, chainstate.bitcoinBlockHeight), data: chainstate };
    }),
  (_after, chainstate) => json(201, chainstate),
);
