/**
 * A typed client of the service for pages and back ends: one method per endpoint, amounts
 * as `bigint` both ways, errors as the problem object. Browser-safe: it only needs a
 * Fetch-API `fetch`.
 */
import { type Amount, MAX_AMOUNT } from '../core/amount.js';
import type { VerdictReason } from '../core/checks.js';
import type { Result } from '../core/errors.js';
import { PegLimitsError } from '../core/errors.js';
import type { PegIntegrity } from '../core/integrity.js';
import type { LimitsEvent, PendingChange } from '../core/state.js';
import type { AccountLimits, Limits } from '../core/views.js';
import type { MintWindowView, WindowView } from '../core/window-views.js';
import { encodeJson, tryDecodeJson } from '../http/json.js';
import { changeOrLimits, num, toChange, toIntegrity, toWindow } from './answer-values.js';

/** Options of {@link createLimitsClient}. */
export interface LimitsClientOptions {
  /** Where the service is: `https://limits.bridge.example` (a path prefix is kept). */
  readonly baseUrl: string;
  /** The `fetch` to use (default: the global one). */
  readonly fetch?: typeof fetch | undefined;
}

/**
 * An error as the service describes it (RFC 9457), or as the client met it: `network_error`
 * (no answer), `invalid_response` (an answer that is not the JSON it should be),
 * `invalid_amount` (an amount the client would not send).
 */
export interface Problem {
  readonly type: string;
  readonly title: string;
  /** The HTTP status; 0 when there was no answer. */
  readonly status: number;
  readonly detail: string;
  /** Stable snake_case code (`account_not_found`, `invalid_credentials`, …). */
  readonly code: string;
  /** The same text as `detail`. */
  readonly message: string;
  /** The field at fault, when one is. */
  readonly path?: string;
}

/** What a client method gives when the service answered as asked: the value and the status. */
export interface Answered<T> {
  /** The answer's body, read exactly (amounts as bigints). */
  readonly value: T;
  /** The HTTP status (200, or 201 and 202 where the interface says so). */
  readonly status: number;
}

/** The answer of the check endpoints. */
export interface CheckAnswer {
  readonly ok: boolean;
  readonly reason: VerdictReason | null;
  readonly limit: Amount | null;
  /** For a refusal by a window cap: the tip height at which it would pass; else null. */
  readonly availableAt: number | null;
}

/** A client of one service: see {@link createLimitsClient}. */
export interface LimitsClient {
  /** `GET /limits`. */
  getLimits(): Promise<Result<Answered<Limits>, Problem>>;
  /** `GET /limits/{account}`; `account_not_found` when the account has no entry. */
  getAccountLimits(account: string): Promise<Result<Answered<AccountLimits>, Problem>>;
  /** `GET /limits/{account}/withdrawals/{amount}`. */
  checkWithdrawal(account: string, amount: Amount): Promise<Result<Answered<CheckAnswer>, Problem>>;
  /** `GET /limits/{account}/deposits/{amount}`. */
  checkDeposit(account: string, amount: Amount): Promise<Result<Answered<CheckAnswer>, Problem>>;
  /** `GET /window`, or `GET /window/{account}` (`window_not_found` when it has none). */
  getWindow(account?: string): Promise<Result<Answered<WindowView>, Problem>>;
  /**
   * `GET /mint-window`, or `GET /mint-window/{account}` (`window_not_found` when it has none):
   * the mint window, `getWindow`'s twin over the mints.
   */
  getMintWindow(account?: string): Promise<Result<Answered<MintWindowView>, Problem>>;
  /** `GET /integrity`: the check of the peg's backing (when every cap reads 0, why). */
  getIntegrity(): Promise<Result<Answered<PegIntegrity>, Problem>>;
  /** `POST /start_throttle`. */
  startThrottle(name: string, secret: string): Promise<Result<Answered<Limits>, Problem>>;
  /**
   * `POST /admin/events` with an operator token: the Limits after the events (200), or,
   * where loosening waits and the batch loosens, the pending change it became (202: tell
   * them apart by `status`).
   */
  postEvents(
    events: LimitsEvent | ReadonlyArray<LimitsEvent>,
    token: string,
  ): Promise<Result<Answered<Limits | PendingChange>, Problem>>;
  /** `GET /admin/changes`: the pending changes, oldest first. */
  getChanges(token: string): Promise<Result<Answered<ReadonlyArray<PendingChange>>, Problem>>;
  /**
   * `POST /admin/changes/{id}/approve`: the change with the approval, or the Limits once
   * the approval reached its quorum and it applied (a change has `approvals`).
   */
  approveChange(
    id: number,
    token: string,
  ): Promise<Result<Answered<PendingChange | Limits>, Problem>>;
  /** `DELETE /admin/changes/{id}`: the change cancelled. */
  cancelChange(id: number, token: string): Promise<Result<Answered<PendingChange>, Problem>>;
  /**
   * Follows `GET /events`: calls `onLimits` with the current limits at once and after every
   * change, with the log position they reflect. A lost stream is opened again with back-off
   * (0.5 s doubling to 10 s), resuming with `Last-Event-ID`; `onError` hears why. Returns a
   * function that stops it.
   */
  subscribe(
    onLimits: (limits: Limits, position: number) => void,
    onError?: (problem: Problem) => void,
  ): () => void;
}

function localProblem(code: string, status: number, detail: string): Problem {
  return {
    type: `urn:peg-limits:problem:${code}`,
    title: code.replace(/_/g, ' '),
    status,
    detail,
    code,
    message: detail,
  };
}

function isProblem(value: unknown): value is Problem {
  const v = value as Record<string, unknown>;
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof v.code === 'string' &&
    typeof v.detail === 'string'
  );
}

function toCheck(value: unknown): CheckAnswer {
  const c = value as Record<string, unknown>;
  return { ...(c as unknown as CheckAnswer), availableAt: num(c.availableAt) };
}

// A read that has an answer already asks whether it changed (If-None-Match).
function withValidator(init: RequestInit | undefined, etag: string | undefined) {
  if (etag === undefined) return init;
  return { ...init, headers: { ...init?.headers, 'if-none-match': etag } };
}

// Read your writes: after a change this client made, a read asks for a replica that has it.
function readingYourWrites(init: RequestInit | undefined, seen: number): RequestInit | undefined {
  if (seen === 0) return init;
  return { ...init, headers: { ...init?.headers, 'peg-limits-min-position': String(seen) } };
}

function noAnswer(url: string, e: unknown): Problem {
  return localProblem(
    'network_error',
    0,
    `no answer from ${url}: ${e instanceof Error ? e.message : String(e)}`,
  );
}

// What an answer says: its value converted, or the problem it carries (or a problem of our
// own when it is no problem body, or its body no JSON object).
function answerOf<T>(
  response: Response,
  text: string,
  path: string,
  convert: (value: unknown) => T,
): Result<Answered<T>, Problem> {
  const parsed = tryDecodeJson(text);
  if (!response.ok) {
    if (parsed.ok && isProblem(parsed.value)) {
      const p = parsed.value as unknown as Record<string, unknown>;
      return { ok: false, error: { ...(p as unknown as Problem), status: Number(p.status) } };
    }
    return {
      ok: false,
      error: localProblem(
        'invalid_response',
        response.status,
        `${path} answered ${response.status} without a problem body`,
      ),
    };
  }
  if (!parsed.ok || typeof parsed.value !== 'object' || parsed.value === null) {
    return {
      ok: false,
      error: localProblem(
        'invalid_response',
        response.status,
        `${path} answered ${response.status} with a body that is not a JSON object`,
      ),
    };
  }
  try {
    return { ok: true, value: convert(parsed.value), status: response.status };
  } catch (e) {
    return {
      ok: false,
      error: localProblem('invalid_response', response.status, `${path}: ${String(e)}`),
    };
  }
}

// One Server-Sent Events block: its `event:`, its `data:` lines joined, its `id:`.
function eventBlock(block: string): { event: string; data: string; id: string | undefined } {
  let event = 'message';
  const data: string[] = [];
  let id: string | undefined;
  for (const line of block.split('\n')) {
    const colon = line.indexOf(':');
    if (colon === 0) continue; // a comment (the heartbeat)
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id') id = value;
  }
  return { event, data: data.join('\n'), id };
}

/**
 * Creates a client of the service at `baseUrl`. Every method resolves with
 * `{ ok: true, value, status }` or `{ ok: false, error }` (the service's problem object,
 * with its `code`); none rejects or throws, whatever the network or the server does. After a change
 * it made is accepted, its reads carry `Peg-Limits-Min-Position` with that change's log
 * position, so a replica answers them only once it has the change (read your writes).
 *
 * @example
 * ```ts
 * const client = createLimitsClient({ baseUrl: 'https://limits.bridge.example' });
 * const r = await client.checkWithdrawal('alice', 150_000_000n);
 * if (r.ok && !r.value.ok) console.log(`try again at block ${r.value.availableAt}`);
 * if (!r.ok) console.error(r.error.code, r.error.message);
 * ```
 */
export function createLimitsClient(options: LimitsClientOptions): LimitsClient {
  const base = options.baseUrl.replace(/\/+$/, '');
  const doFetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  // The log position of this client's last accepted change (0: none yet).
  let seen = 0;
  // The last answers of the reads, with their ETags: an unchanged one comes back as a 304
  // without a body, and its answer is the one parsed before (the newest 64 paths).
  const validated = new Map<string, { etag: string; answer: Result<Answered<unknown>, Problem> }>();

  async function call<T>(
    path: string,
    convert: (value: unknown) => T,
    init?: RequestInit,
  ): Promise<Result<Answered<T>, Problem>> {
    let response: Response;
    let text: string;
    const changes = init?.method === 'POST' || init?.method === 'DELETE';
    const last = changes ? undefined : validated.get(path);
    try {
      const asked = changes ? init : readingYourWrites(withValidator(init, last?.etag), seen);
      response = await doFetch(`${base}${path}`, asked);
      if (response.status === 304 && last !== undefined) {
        await response.body?.cancel();
        return last.answer as Result<Answered<T>, Problem>;
      }
      text = await response.text();
      if (changes && response.ok) {
        const at = Number(response.headers.get('peg-limits-position'));
        if (Number.isSafeInteger(at) && at > seen) seen = at;
      }
    } catch (e) {
      return { ok: false, error: noAnswer(`${base}${path}`, e) };
    }
    const answer = answerOf(response, text, path, convert);
    const etag = response.headers.get('etag');
    if (!changes && answer.ok && etag !== null) {
      validated.delete(path);
      validated.set(path, { etag, answer });
      if (validated.size > 64) validated.delete(validated.keys().next().value as string);
    }
    return answer;
  }

  const same = <T>(value: unknown) => value as T;
  const account = (name: string) => encodeURIComponent(name);

  function check(kind: 'withdrawals' | 'deposits', name: string, amount: Amount) {
    if (typeof amount !== 'bigint' || amount < 1n || amount > MAX_AMOUNT) {
      return Promise.resolve<Result<Answered<CheckAnswer>, Problem>>({
        ok: false,
        error: localProblem(
          'invalid_amount',
          0,
          `the amount must be a bigint from 1 to 2^63−1, got ${String(amount)}`,
        ),
      });
    }
    return call(`/limits/${account(name)}/${kind}/${amount}`, toCheck);
  }

  function post(path: string, body: string, headers: Record<string, string> = {}) {
    return call(path, same<Limits>, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
  }

  return {
    getLimits: () => call('/limits', same<Limits>),
    getAccountLimits: (name) => call(`/limits/${account(name)}`, same<AccountLimits>),
    checkWithdrawal: (name, amount) => check('withdrawals', name, amount),
    checkDeposit: (name, amount) => check('deposits', name, amount),
    getWindow: (name) =>
      call(name === undefined ? '/window' : `/window/${account(name)}`, toWindow),
    getMintWindow: (name) =>
      call(
        name === undefined ? '/mint-window' : `/mint-window/${account(name)}`,
        (v) => toWindow(v) as unknown as MintWindowView,
      ),
    getIntegrity: () => call('/integrity', toIntegrity),
    startThrottle: (name, secret) => post('/start_throttle', JSON.stringify({ name, secret })),
    postEvents: (events, token) =>
      call('/admin/events', changeOrLimits, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: encodeJson(events),
      }),
    getChanges: (token) =>
      call('/admin/changes', (v) => (v as unknown[]).map(toChange), {
        headers: { authorization: `Bearer ${token}` },
      }),
    approveChange: (id, token) =>
      call(`/admin/changes/${id}/approve`, changeOrLimits, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
      }),
    cancelChange: (id, token) =>
      call(`/admin/changes/${id}`, toChange, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${token}` },
      }),
    subscribe: (onLimits, onError) => subscribeTo(base, doFetch, onLimits, onError),
  };
}

// GET /events followed, reconnecting with back-off (0.5 s doubling to 10 s), from the last
// event id; returns the stop function.
function subscribeTo(
  base: string,
  doFetch: NonNullable<LimitsClientOptions['fetch']>,
  onLimits: Parameters<LimitsClient['subscribe']>[0],
  onError: Parameters<LimitsClient['subscribe']>[1],
): () => void {
  let stopped = false;
  let controller: AbortController | undefined;
  let lastId: string | undefined;
  const take = (block: string) => {
    const { event, data, id } = eventBlock(block);
    if (id !== undefined) lastId = id;
    if (event !== 'limits') return;
    const parsed = tryDecodeJson(data);
    if (parsed.ok && typeof parsed.value === 'object' && parsed.value !== null)
      onLimits(parsed.value as Limits, Number(id ?? lastId ?? 0));
    else
      onError?.(localProblem('invalid_response', 200, 'GET /events sent limits that are not JSON'));
  };
  const run = async () => {
    let delay = 500;
    while (!stopped) {
      controller = new AbortController();
      try {
        const response = await doFetch(`${base}/events`, {
          headers: lastId === undefined ? {} : { 'last-event-id': lastId },
          signal: controller.signal,
        });
        if (!response.ok || response.body === null)
          throw new PegLimitsError('network_error', `GET /events answered ${response.status}`);
        delay = 500;
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
          for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
            take(buffer.slice(0, end));
            buffer = buffer.slice(end + 2);
          }
        }
        if (!stopped) throw new PegLimitsError('network_error', 'the stream ended');
      } catch (e) {
        if (stopped) return;
        onError?.(
          localProblem(
            'network_error',
            0,
            `GET /events: ${e instanceof Error ? e.message : String(e)}`,
          ),
        );
      }
      if (stopped) return;
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 10_000);
    }
  };
  void run();
  return () => {
    stopped = true;
    controller?.abort();
  };
}
