// Answers an HTTP cache can hold (src/http/validators.ts, through the pure handler): a
// strong ETag on every public read that changes exactly when its body does, 304 without a
// body for a matching If-None-Match, the cache policy, no-store where a read must not be
// shared, and Vary naming what the answer depends on.
import { describe, expect, test } from 'vitest';
import { ROUTES } from '../../src/http/routes.js';
import { entityTag, noneMatchHits } from '../../src/http/validators.js';
import {
  applyAll,
  createLimitsState,
  type HandleOptions,
  type HttpRequest,
  handleRequest,
  type LimitsState,
} from '../../src/index.js';
import { TOKEN } from '../support/tokens.js';

function state(): LimitsState {
  const r = applyAll(
    createLimitsState({
      limits: {
        rollingWithdrawalBlocks: 144n,
        rollingWithdrawalCap: 1_000n,
        accountCaps: {
          alice: {
            rollingWithdrawalBlocks: 10n,
            rollingWithdrawalCap: 100n,
            rollingMintBlocks: 10n,
            rollingMintCap: 100n,
          },
        },
      },
    }),
    [
      { type: 'blockConnected', height: 100 },
      { type: 'withdrawalRequested', id: 'w1', account: 'alice', amount: 5n, height: 100 },
    ],
  );
  if (!r.ok) throw r.error;
  return r.state;
}

const READS = [
  '/limits',
  '/limits/alice',
  '/limits/alice/withdrawals/5',
  '/limits/alice/deposits/5',
  '/window',
  '/window/alice',
  '/mint-window',
  '/mint-window/alice',
];

const get = (
  s: LimitsState,
  path: string,
  headers: Record<string, string> = {},
  options: HandleOptions = {},
  method = 'GET',
) => handleRequest(s, { method, path, headers } as HttpRequest, options).response;

describe('the validators of the public reads', () => {
  test('the cacheable routes are exactly the public reads', () => {
    const cacheable = ROUTES.filter((r) => r.cacheable).map((r) => r.pattern);
    expect(cacheable.sort()).toEqual(
      [
        '/integrity',
        '/limits',
        '/limits/{account}',
        '/limits/{account}/withdrawals/{amount}',
        '/limits/{account}/deposits/{amount}',
        '/window',
        '/window/{account}',
        '/mint-window',
        '/mint-window/{account}',
      ].sort(),
    );
  });

  test.each(READS)('%s carries a strong ETag, no-cache by default, and Vary', (path) => {
    const r = get(state(), path);
    expect(r.status).toBeLessThan(300);
    expect(r.headers.etag).toMatch(/^"[0-9a-z]+-[0-9a-z]+"$/);
    expect(r.headers['cache-control']).toBe('no-cache');
    expect(r.headers.vary).toBe('peg-limits-min-position');
  });

  test.each(READS)(
    '%s: If-None-Match with its ETag is 304 without a body, GET and HEAD',
    (path) => {
      const s = state();
      const etag = get(s, path).headers.etag!;
      for (const method of ['GET', 'HEAD']) {
        const r = get(s, path, { 'if-none-match': etag }, {}, method);
        expect(r.status, method).toBe(304);
        expect(r.body).toBe('');
        expect(r.headers.etag).toBe(etag);
        expect(r.headers['content-type']).toBeUndefined();
        expect(r.headers['cache-control']).toBe('no-cache');
      }
    },
  );

  test('the ETag changes exactly when the body does', () => {
    const s = state();
    const before = get(s, '/limits');
    // A change to the state that leaves /limits/alice as it was, and one that changes both.
    const other = applyAll(s, [{ type: 'peggedTotalObserved', total: 7n }]);
    const more = applyAll(s, [
      { type: 'withdrawalRequested', id: 'w2', account: 'bob', amount: 9n, height: 100 },
    ]);
    if (!other.ok || !more.ok) throw new Error('refused');
    expect(get(other.state, '/limits').headers.etag).toBe(before.headers.etag);
    expect(get(other.state, '/limits/alice').headers.etag).toBe(
      get(s, '/limits/alice').headers.etag,
    );
    expect(get(more.state, '/limits').headers.etag).not.toBe(before.headers.etag);
    // The old ETag no longer matches: the new body, 200.
    const r = get(more.state, '/limits', { 'if-none-match': before.headers.etag! });
    expect(r.status).toBe(200);
    expect(r.body).not.toBe(before.body);
  });

  test('a list, a weak form or * in If-None-Match matches, and another tag does not', () => {
    const s = state();
    const etag = get(s, '/window').headers.etag!;
    expect(get(s, '/window', { 'if-none-match': `"x-1", ${etag}` }).status).toBe(304);
    expect(get(s, '/window', { 'if-none-match': `W/${etag}` }).status).toBe(304);
    expect(get(s, '/window', { 'if-none-match': '*' }).status).toBe(304);
    expect(get(s, '/window', { 'if-none-match': '"x-1"' }).status).toBe(200);
  });

  test('with a max age, the policy lets caches hold it, and serve it stale while they ask again', () => {
    const r = get(state(), '/limits', {}, { cacheMaxAge: 2 });
    expect(r.headers['cache-control']).toBe('public, max-age=2, stale-while-revalidate=2');
  });

  test('a read with Peg-Limits-Min-Position is no-store, with its ETag still', () => {
    const r = get(state(), '/limits', { 'peg-limits-min-position': '3' }, { cacheMaxAge: 2 });
    expect(r.headers['cache-control']).toBe('no-store');
    expect(r.headers.etag).toBeDefined();
  });

  test('a 404 of a read is never stored with a validator of a body', () => {
    const r = get(state(), '/limits/nobody', {}, { cacheMaxAge: 2 });
    expect(r.status).toBe(404);
    expect(r.headers.etag).toBeUndefined();
  });

  test('answers that differ by origin say Vary: origin, and expose the ETag to the page', () => {
    const options = { cors: ['https://a.example'] };
    const r = get(state(), '/limits', { origin: 'https://a.example' }, options);
    expect(r.headers.vary).toBe('peg-limits-min-position, origin');
    expect(r.headers['access-control-expose-headers']).toBe('peg-limits-position, etag');
    const any = get(state(), '/limits', { origin: 'https://a.example' });
    expect(any.headers.vary).toBe('peg-limits-min-position');
    expect(any.headers['access-control-expose-headers']).toBe('peg-limits-position, etag');
    const pre = handleRequest(state(), { method: 'OPTIONS', path: '/limits' }).response;
    expect(pre.headers['access-control-allow-headers']).toContain('if-none-match');
  });

  test('a 304 keeps the CORS headers a page on another origin needs to read it', () => {
    const s = state();
    const etag = get(s, '/limits').headers.etag!;
    const r = get(s, '/limits', { 'if-none-match': etag, origin: 'https://a.example' });
    expect(r.status).toBe(304);
    expect(r.headers['access-control-allow-origin']).toBe('*');
  });

  test('operator routes and other reads stay no-store, without an ETag', () => {
    const options = { adminToken: TOKEN };
    const changes = get(state(), '/admin/changes', { authorization: `Bearer ${TOKEN}` }, options);
    expect(changes.headers['cache-control']).toBe('no-store');
    expect(changes.headers.etag).toBeUndefined();
    expect(get(state(), '/readyz').headers['cache-control']).toBe('no-store');
  });

  test('a read of an unchanged state answers with the same object, its 304 too', () => {
    const s = state();
    expect(get(s, '/limits')).toBe(get(s, '/limits'));
    const etag = get(s, '/limits').headers.etag!;
    expect(get(s, '/limits', { 'if-none-match': etag })).toBe(
      get(s, '/limits', { 'if-none-match': etag }),
    );
  });
});

describe('entityTag and noneMatchHits', () => {
  test('equal texts have equal tags, and a change of one character, or of length, changes the tag', () => {
    expect(entityTag('{"a":1}')).toBe(entityTag('{"a":1}'));
    expect(entityTag('{"a":1}')).not.toBe(entityTag('{"a":2}'));
    expect(entityTag('{"a":1}')).not.toBe(entityTag('{"a":1} '));
  });

  test('10,000 distinct bodies have 10,000 distinct tags', () => {
    const tags = new Set<string>();
    for (let i = 0; i < 10_000; i++) tags.add(entityTag(`{"availableToWithdraw":${i}}`));
    expect(tags.size).toBe(10_000);
  });

  test('an empty or malformed If-None-Match matches nothing', () => {
    expect(noneMatchHits('', '"a-1"')).toBe(false);
    expect(noneMatchHits('"a-1', '"a-1"')).toBe(false);
  });
});
