/**
 * The core in a real browser, as a bridge page uses it: the published package bundled for
 * the browser (esbuild, ESM, minified), loaded by a page in headless Chromium, replays a
 * seeded history of about 2,000 events and answers `getLimits`, `checkWithdrawal`,
 * `checkDeposit`, `whenAvailable`, `windowOf` and the account views. The answers must equal
 * Node's on the same events, to the digit past 2^53. Without Chromium this says that it
 * skips, and why; under `CI=true` a missing browser is a failure.
 */
import { readFileSync } from 'node:fs';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import { describe, expect, test } from 'vitest';
import * as lib from '../../src/index.js';
import { apply, createLimitsState, encodeJson, type LimitsEvent } from '../../src/index.js';
import { CHROMIUM } from '../support/chromium.js';
// @ts-expect-error: plain JavaScript shared with the page, no types of its own.
import { answers } from '../support/core-queries.mjs';

const TWO_53 = 2n ** 53n;

/** A seeded history that applies whole: each candidate is kept only when it applies. */
function history(seed: number, length: number): LimitsEvent[] {
  let x = seed >>> 0;
  const random = () => {
    // xorshift32: the same numbers on every machine.
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2 ** 32;
  };
  const int = (n: number) => Math.floor(random() * n);
  const big = (bits: number) => BigInt(Math.floor(random() * 2 ** 26)) << BigInt(bits - 26);
  let state = createLimitsState({ historyBlocks: 288 });
  const kept: LimitsEvent[] = [];
  let tip = 870_000;
  const ids: string[] = [];
  const candidates = (): LimitsEvent => {
    const r = random();
    const account = `a${int(5)}`;
    if (r < 0.1) return { type: 'blockConnected', height: tip + 1 + int(3) };
    if (r < 0.7)
      return {
        type: 'withdrawalRequested',
        id: `w${ids.length}`,
        account,
        amount: random() < 0.3 ? big(56) : BigInt(1 + int(500_000_000)),
        height: tip - int(30),
      };
    if (r < 0.78 && ids.length > 0)
      return { type: 'withdrawalRejected', id: ids[int(ids.length)]! };
    if (r < 0.8) return { type: 'chainReorganized', height: tip - 1 - int(3) };
    if (r < 0.85)
      return {
        type: 'accountLimitsSet',
        account,
        limits:
          random() < 0.5
            ? { rollingWithdrawalBlocks: BigInt(1 + int(40)), rollingWithdrawalCap: big(55) }
            : { perWithdrawalCap: big(58), pegCap: big(60), perDepositMinimum: 1000n },
      };
    if (r < 0.9)
      return random() < 0.5
        ? { type: 'peggedTotalObserved', total: big(61) }
        : { type: 'peggedTotalObserved', total: big(57), account };
    if (r < 0.93) return { type: 'throttleStarted', initiator: 'ops-1' };
    if (r < 0.95) return { type: 'throttleEnded' };
    return {
      type: 'limitsSet',
      limits: {
        pegCap: 9_223_372_036_854_775_807n,
        perDepositCap: big(59),
        perWithdrawalCap: big(60),
        rollingWithdrawalBlocks: BigInt(6 + int(100)),
        rollingWithdrawalCap: big(61),
      },
    };
  };
  kept.push({ type: 'blockConnected', height: tip });
  state = (apply(state, kept[0]!) as { ok: true; state: typeof state }).state;
  while (kept.length < length) {
    const event = candidates();
    const r = apply(state, event);
    if (!r.ok) continue;
    state = r.state;
    if (event.type === 'blockConnected' || event.type === 'chainReorganized') tip = event.height;
    if (event.type === 'withdrawalRequested') ids.push(event.id);
    kept.push(event);
  }
  return kept;
}

if (CHROMIUM === undefined)
  console.warn(
    'SKIPPING the core-in-a-browser test: no Chromium at /usr/bin/chromium (apt-get install chromium, or set CHROMIUM_PATH)',
  );

describe.skipIf(CHROMIUM === undefined)('the core in headless Chromium', () => {
  test('a page replays 2,000 seeded events and answers exactly as Node does, past 2^53', async () => {
    const events = history(20_261_124, 2_000);
    const text = encodeJson(events);
    const inNode = answers(lib, text) as string;
    // The answers hold amounts past 2^53 that a JS number would round.
    const inexact = [...inNode.matchAll(/\d{16,}/g)].filter(
      (m) => BigInt(m[0]) > TWO_53 && BigInt(Number(m[0])) !== BigInt(m[0]),
    );
    expect(inexact.length).toBeGreaterThan(10);

    // The package as a page gets it: the built ESM entry, bundled for the browser.
    const bundle = await build({
      entryPoints: ['dist/index.js'],
      bundle: true,
      format: 'esm',
      platform: 'browser',
      minify: true,
      write: false,
    });
    const files: Record<string, [string, string]> = {
      '/': [
        'text/html',
        `<!doctype html><script type="module">
          import * as lib from './peg-limits.js';
          import { answers } from './queries.js';
          window.answer = (text) => answers(lib, text);
        </script>`,
      ],
      '/peg-limits.js': ['text/javascript', bundle.outputFiles[0]!.text],
      '/queries.js': ['text/javascript', readFileSync('test/support/core-queries.mjs', 'utf8')],
    };
    const browser = await chromium.launch({ executablePath: CHROMIUM! });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.route('http://bridge.test/**', (route) => {
        const [type, body] = files[new URL(route.request().url()).pathname] ?? ['text/plain', ''];
        return route.fulfill({ status: 200, contentType: type, body });
      });
      await page.goto('http://bridge.test/');
      await page.waitForFunction(() => 'answer' in window);
      const inBrowser = await page.evaluate(
        (t) => (window as unknown as { answer: (t: string) => string }).answer(t),
        text,
      );
      expect(errors).toEqual([]);
      expect(inBrowser).toBe(inNode);
    } finally {
      await browser.close();
    }
  });
});
