/**
 * The reads of the limits: `GET /limits`, `GET /window` and `GET /mint-window` (their bodies
 * encoded once per state: a state is immutable), an account's limits and windows, and the checks of a
 * withdrawal or a deposit. A read changes nothing. Pure.
 */
import { MAX_AMOUNT } from '../core/amount.js';
import { checkDeposit, checkWithdrawal } from '../core/checks.js';
import { pegIntegrity } from '../core/integrity.js';
import type { LimitsState } from '../core/state.js';
import { getAccountLimits, getLimits } from '../core/views.js';
import { mintWindowOf, windowOf } from '../core/window-views.js';
import { accountOf, INVALID_ACCOUNT, json, problem } from './answers.js';
import type { HandleResult, HttpResponse, Route, RouteParams } from './messages.js';

/** An answer that leaves the state as it is and journals nothing. */
export const unchanged = (state: LimitsState, response: HttpResponse): HandleResult => ({
  state,
  response,
  events: [],
});

// A state is immutable, so a read's body is encoded once per state: with many account
// entries, encoding is most of the work of an answer.
function perState(view: (state: LimitsState) => unknown): (state: LimitsState) => HttpResponse {
  const bodies = new WeakMap<LimitsState, HttpResponse>();
  return (state) => {
    let response = bodies.get(state);
    if (response === undefined) {
      response = json(200, view(state));
      bodies.set(state, response);
    }
    return response;
  };
}

/** `GET /limits` of a state, made once per state. */
export const limitsResponse = perState(getLimits);
/** `GET /window` of a state, made once per state. */
export const windowResponse = perState((state) => windowOf(state));
/** `GET /mint-window` of a state, made once per state. */
export const mintWindowResponse = perState((state) => mintWindowOf(state));
/** `GET /integrity` of a state, made once per state. */
export const integrityResponse = perState(pegIntegrity);

// A route on one account: the account decoded and checked first (400 invalid_account).
function onAccount(
  answer: (state: LimitsState, account: string, params: RouteParams) => HttpResponse,
): Route['handle'] {
  return (state, _request, params) => {
    const account = accountOf(params.account);
    return unchanged(
      state,
      account === undefined
        ? problem(400, 'invalid_account', INVALID_ACCOUNT)
        : answer(state, account, params),
    );
  };
}

const AMOUNT_TEXT = /^[0-9]{1,19}$/;

/** GET /limits/{account}/withdrawals/{amount} and …/deposits/{amount}: the verdict as data. */
export function checkRoute(kind: 'withdrawals' | 'deposits'): Route['handle'] {
  return onAccount((state, account, params) => {
    const text = params.amount ?? '';
    const amount = AMOUNT_TEXT.test(text) ? BigInt(text) : undefined;
    if (amount === undefined || amount < 1n || amount > MAX_AMOUNT) {
      return problem(
        400,
        'invalid_amount',
        `the amount must be an integer from 1 to 2^63−1 in the smallest unit, got ${JSON.stringify(text.slice(0, 40))}`,
      );
    }
    const request = { account, amount };
    const v =
      kind === 'withdrawals' ? checkWithdrawal(state, request) : checkDeposit(state, request);
    return json(
      200,
      v.ok
        ? { ok: true, reason: null, limit: null, availableAt: null }
        : { ok: false, reason: v.reason, limit: v.limit, availableAt: v.availableAt },
    );
  });
}

// An account's own window of one kind: 200 with it, 404 when its entry sets none.
function ownWindowRoute(
  view: (state: LimitsState, account: string) => unknown,
  what: string,
): Route['handle'] {
  return onAccount((state, account) => {
    const own = view(state, account);
    return own === undefined
      ? problem(
          404,
          'window_not_found',
          `${JSON.stringify(account)} has no ${what} of its own: the global ${what} applies`,
        )
      : json(200, own);
  });
}

/** `GET /window/{account}`: the account's own window (404 when its entry sets none). */
export const accountWindowRoute = ownWindowRoute(windowOf, 'window');

/** `GET /mint-window/{account}`: the account's own mint window (404 when its entry sets none). */
export const accountMintWindowRoute = ownWindowRoute(mintWindowOf, 'mint window');

/** `GET /limits/{account}`: the account's entry (201, as Emily answers; 404 without one). */
export const accountLimitsRoute: Route['handle'] = onAccount((state, account) => {
  const limits = getAccountLimits(state, account);
  return limits === undefined
    ? problem(
        404,
        'account_not_found',
        `${JSON.stringify(account)} has no entry of its own: the global limits apply`,
      )
    : json(201, limits);
});
