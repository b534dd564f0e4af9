/**
 * The dashboard and CORS in a real headless browser (Debian's `chromium`, driven by
 * playwright-core), against the real server. `.ci/run` installs Chromium when it is
 * missing; elsewhere these tests say that they skip, and why. Screenshots are kept in
 * `test-artifacts/`.
 */
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  applyAll,
  createLimitsState,
  decodeJson,
  generateThrottleSecret,
  hashThrottleSecret,
  type LimitsEvent,
} from '../../../src/index.js';
import type { RunningServer } from '../../../src/server/node-http/serve.js';
import { CHROMIUM } from '../../support/chromium.js';
import { closeServers, serveInProcess } from '../../support/in-process.js';
import { TOKEN } from '../../support/tokens.js';

afterAll(closeServers);

const SECRET = generateThrottleSecret();
const ARTIFACTS = 'test-artifacts';

if (CHROMIUM === undefined) {
  console.warn(
    'SKIPPING the browser tests: no Chromium at /usr/bin/chromium (apt-get install chromium, or set CHROMIUM_PATH)',
  );
}

test('a browser is there when CI runs the tests', () => {
  // CI installs Chromium (.ci/run): there, a missing browser is a failure, not a skip.
  if (process.env.CI === 'true') expect(CHROMIUM, 'Chromium under CI').toBeDefined();
});

describe.skipIf(CHROMIUM === undefined)('the dashboard in a real browser', () => {
  let server: RunningServer;
  let browser: Browser;
  let other: Server;
  let otherUrl: string;

  beforeAll(async () => {
    const accountCaps: Record<string, { pegCap: bigint; perWithdrawalCap: bigint }> = {};
    for (let i = 0; i < 10_000; i++)
      accountCaps[`account-${String(i).padStart(5, '0')}`] = {
        pegCap: 5_000_000_000n + BigInt(i),
        perWithdrawalCap: 100_000_000n,
      };
    const events: LimitsEvent[] = [{ type: 'blockConnected', height: 870_000 }];
    // Withdrawals at 6 of the window's heights, one of them rejected entirely.
    let n = 0;
    for (const [height, amounts] of [
      [869_870, [120_000_000n, 80_000_000n]],
      [869_900, [310_000_000n]],
      [869_950, [55_000_000n, 45_000_000n, 100_000_000n]],
      [869_990, [250_000_000n]],
      [869_999, [75_000_000n]],
      [870_000, [190_000_000n]],
    ] as const)
      for (const amount of amounts)
        events.push({
          type: 'withdrawalRequested',
          id: `w${n++}`,
          account: `account-0000${n % 7}`,
          amount,
          height,
        });
    events.push({
      type: 'withdrawalRequested',
      id: 'gone',
      account: 'x',
      amount: 5n,
      height: 869_980,
    });
    events.push({ type: 'withdrawalRejected', id: 'gone' });
    // Mints: 3 BTC of the mint window's 5 at 869,900, 1.5 BTC at 870,000; 500 BTC pegged.
    events.push({ type: 'peggedTotalObserved', total: 50_000_000_000n });
    for (const [height, amount, vout] of [
      [869_900, 300_000_000n, 0],
      [870_000, 150_000_000n, 1],
    ] as const)
      events.push({
        type: 'depositMinted',
        id: `${'ab'.repeat(32)}:${vout}`,
        account: 'account-00001',
        amount,
        height,
      });
    events.push({
      type: 'throttleKeyAdded',
      name: 'ops-1',
      secretHash: hashThrottleSecret(SECRET),
    });
    const start = applyAll(
      createLimitsState({
        limits: {
          pegCap: 100_000_000_000n,
          perDepositMinimum: 10_000n,
          perDepositCap: 1_000_000_000n,
          perWithdrawalCap: 1_000_000_000n,
          rollingWithdrawalBlocks: 144n,
          rollingWithdrawalCap: 10_000_000_000n,
          rollingMintBlocks: 144n,
          rollingMintCap: 500_000_000n,
          accountCaps,
        },
      }),
      events,
    );
    if (!start.ok) throw start.error;
    server = await serveInProcess({
      initial: start.state,
      adminToken: TOKEN,
    });
    browser = await chromium.launch({ executablePath: CHROMIUM!, args: ['--no-sandbox'] });
    // A page on another origin (another port), for CORS.
    other = createServer((_, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><title>another origin</title>');
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    mkdirSync(ARTIFACTS, { recursive: true });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await new Promise((r) => other?.close(r));
  });

  async function api(path: string) {
    return decodeJson(await (await fetch(`${server.url}${path}`)).text()) as Record<
      string,
      unknown
    >;
  }

  async function open(width: number, height: number): Promise<Page> {
    const page = await browser.newPage({ viewport: { width, height } });
    await page.goto(`${server.url}/`);
    await page.waitForSelector('body[data-loaded="true"]', { timeout: 10_000 });
    return page;
  }

  const value = (page: Page, selector: string) =>
    page.$eval(selector, (el) => (el as HTMLElement).dataset.value);

  test('shows the numbers the API gives, one bar per non-empty block, and the next release', async () => {
    const page = await open(1280, 1000);
    const limits = await api('/limits');
    const window = await api('/window');
    for (const field of [
      'availableToWithdraw',
      'pegCap',
      'perDepositCap',
      'perDepositMinimum',
      'perWithdrawalCap',
      'rollingWithdrawalCap',
      'rollingWithdrawalBlocks',
    ]) {
      const id = field === 'availableToWithdraw' ? '#available' : `#${field}`;
      expect(await value(page, id), field).toBe(String(limits[field]));
    }
    expect(await value(page, '#withdrawn')).toBe(String(window.withdrawn));
    // 100 BTC less the 12.25 BTC withdrawn, shown as BTC with the trailing zeros cut.
    expect(await page.textContent('#available')).toBe('87.75 BTC');
    expect(await page.isHidden('#roomAt')).toBe(true);
    const sums = window.sums as Array<{ height: bigint; amount: bigint }>;
    expect(sums).toHaveLength(6);
    const bars = await page.$$eval('#chart rect.bar', (els) =>
      els.map((e) => [(e as SVGElement).dataset.height, (e as SVGElement).dataset.value]),
    );
    expect(bars).toEqual(sums.map((s) => [String(s.height), String(s.amount)]));
    const release = window.nextRelease as { height: bigint };
    expect(await page.$eval('#nextRelease', (e) => (e as HTMLElement).dataset.height)).toBe(
      String(release.height),
    );
    expect(await page.isHidden('#throttle')).toBe(true);
    await page.screenshot({ path: `${ARTIFACTS}/dashboard.png`, fullPage: true });
    await page.screenshot({ path: `${ARTIFACTS}/dashboard-top.png` });
    await page.close();
  });

  test('shows the mint window and the peg cap the signers read, and a depositor hears when a deposit would fit', async () => {
    const page = await open(1280, 1000);
    const limits = await api('/limits');
    const mints = await api('/mint-window');
    expect(await value(page, '#availableToMint')).toBe(String(limits.availableToMint));
    expect(await page.textContent('#availableToMint')).toBe('0.5 BTC');
    expect(await value(page, '#minted')).toBe(String(mints.withdrawn));
    expect(await value(page, '#rollingMintCap')).toBe('500000000');
    // The peg cap as configured, beside the one in force.
    expect(await value(page, '#pegCapFixed')).toBe('100000000000');
    // pegCap − supply, as the signers compute it: the mint window's room.
    expect(await value(page, '#pegCapInForce')).toBe(String(50_000_000_000n + 50_000_000n));
    expect(await page.$eval('#mintRelease', (e) => (e as HTMLElement).dataset.height)).toBe(
      String(869_900 + 144),
    );
    await page.fill('#depositAccount', 'someone');
    await page.fill('#depositAmount', '0.5');
    await page.click('#depositForm button');
    await page.waitForFunction(() => document.getElementById('depositAnswer')!.textContent !== '');
    expect(await page.textContent('#depositAnswer')).toBe('0.5 BTC fits now.');
    await page.fill('#depositAmount', '2');
    await page.click('#depositForm button');
    await page.waitForFunction(() =>
      document.getElementById('depositAnswer')!.textContent!.startsWith('Not now'),
    );
    // 2 BTC fits once the 3 BTC minted at 869,900 leave the window, at 870,044.
    expect(await page.$eval('#depositAnswer', (e) => (e as HTMLElement).dataset.availableAt)).toBe(
      '870044',
    );
    expect(await page.textContent('#depositAnswer')).toBe(
      'Not now: more than the mint window has room for (room 0.5 BTC); it would fit from block 870,044 if nothing else is minted.',
    );
    await page.screenshot({ path: `${ARTIFACTS}/dashboard-mint-window.png` });
    await page.close();
  });

  test('a window that starts late says the room is unknown until the block it completes, not "no window"', async () => {
    const late = applyAll(
      createLimitsState({ limits: { rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: 1000n } }),
      [
        { type: 'blockConnected', height: 870_000 },
        { type: 'historyCompleteFrom', height: 870_001 },
      ],
    );
    if (!late.ok) throw late.error;
    const s = await serveInProcess({
      initial: late.state,
    });
    try {
      const page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
      await page.goto(`${s.url}/`);
      await page.waitForSelector('body[data-loaded="true"]', { timeout: 10_000 });
      expect(await page.textContent('#available')).toBe('unknown until block 870,144');
      await page.close();
    } finally {
      await s.close();
    }
  });

  test('a visitor’s page load fails no request and logs no error, with operators configured', async () => {
    const page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
    const errors: string[] = [];
    const failed: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('requestfailed', (r) => failed.push(`${r.url()} ${r.failure()?.errorText}`));
    page.on('response', (r) => {
      if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
    });
    await page.goto(`${server.url}/`);
    await page.waitForSelector('body[data-loaded="true"]', { timeout: 10_000 });
    // A refresh comes from the stream of changes; give the page a moment to settle.
    await page.waitForTimeout(500);
    expect(failed).toEqual([]);
    expect(errors).toEqual([]);
    expect(await page.textContent('#changesNote')).toBe(
      'Give an operator token to see the pending changes.',
    );
    // The icon a browser asks for: the page's own, or /favicon.ico when it declares none (a
    // headless browser often never asks, so the test asks as a browser would).
    const icon = await page.evaluate(async () => {
      const href = document.querySelector<HTMLLinkElement>('link[rel~="icon"]')?.href;
      const url = new URL(href ?? '/favicon.ico', location.href).href;
      const r = await fetch(url);
      return { url: url.slice(0, 30), status: r.status };
    });
    expect(icon).toMatchObject({ status: 200 });
    expect(icon.url).toMatch(/^data:/);
    await page.close();
  });

  test('reading again, it asks with the ETags it has: unchanged answers are 304s, and the figures stay', async () => {
    const page = await open(1000, 800);
    const statuses: number[] = [];
    page.on('response', (r) => {
      if (/\/(limits|window)$/.test(new URL(r.url()).pathname)) statuses.push(r.status());
    });
    const before = await page.textContent('#available');
    await page.evaluate('refresh()');
    await page.waitForFunction(() => Number(document.body.dataset.notModified ?? 0) >= 2);
    expect(statuses).toEqual([304, 304]);
    expect(await page.textContent('#available')).toBe(before);
    await page.close();
  });

  test('a window cap set as a share of the total shows the fixed cap, the share and the total behind the cap in force', async () => {
    const shared = applyAll(
      createLimitsState({
        limits: {
          rollingWithdrawalBlocks: 144n,
          rollingWithdrawalCap: 500_000_000n,
          rollingWithdrawalCapShare: 1_000n,
        },
      }),
      [
        { type: 'blockConnected', height: 870_000 },
        { type: 'peggedTotalObserved', total: 2_000_000_000n },
      ],
    );
    if (!shared.ok) throw shared.error;
    const s = await serveInProcess({
      initial: shared.state,
    });
    try {
      const page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
      await page.goto(`${s.url}/`);
      await page.waitForSelector('body[data-loaded="true"]', { timeout: 10_000 });
      expect(await page.textContent('#rollingWithdrawalCap')).toBe('2 BTC');
      expect(await page.textContent('#capShare')).toBe(
        'The cap in force is the lower of 5 BTC and 10% of the 20 BTC pegged in.',
      );
      await page.close();
    } finally {
      await s.close();
    }
  });

  test("while the breaker on the peg's backing is tripped, a red banner says so and every cap reads 0", async () => {
    const tripped = applyAll(
      createLimitsState({
        limits: {
          perWithdrawalCap: 500n,
          rollingWithdrawalBlocks: 144n,
          rollingWithdrawalCap: 1000n,
        },
      }),
      [
        { type: 'blockConnected', height: 870_000 },
        { type: 'peggedTotalObserved', total: 1_000_000_000n },
        { type: 'reservesObserved', total: 1_000_000_000n, height: 870_000 },
        { type: 'pegIntegritySet', maxUnbacked: 1_000_000n, reservesMaxAge: 6 },
        { type: 'peggedTotalObserved', total: 1_300_000_000n },
      ],
    );
    if (!tripped.ok) throw tripped.error;
    const s = await serveInProcess({ initial: tripped.state });
    try {
      const page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
      await page.goto(`${s.url}/`);
      await page.waitForSelector('body[data-loaded="true"]', { timeout: 10_000 });
      expect(await page.isVisible('#breaker')).toBe(true);
      expect(await page.textContent('#breaker')).toBe(
        'The peg was unbacked at block 870,000 (3 BTC more minted than held): every cap reads 0 until an operator clears the breaker.',
      );
      expect(await page.textContent('#integrityState')).toBe('breaker tripped');
      expect(await page.textContent('#unbacked')).toBe('3 BTC');
      expect(await page.textContent('#perWithdrawalCap')).toBe('0 BTC');
      expect(await page.textContent('#available')).toMatch(/^0 BTC/);
      await page.close();
    } finally {
      await s.close();
    }
  });

  test('while blocks are held, the room is shown as unknown, not as the room before them', async () => {
    const held = applyAll(
      createLimitsState({ limits: { rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: 1000n } }),
      [
        { type: 'blockConnected', height: 870_000 },
        { type: 'blocksHeld', height: 871_000 },
      ],
    );
    if (!held.ok) throw held.error;
    const s = await serveInProcess({
      initial: held.state,
    });
    try {
      const page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
      await page.goto(`${s.url}/`);
      await page.waitForSelector('body[data-loaded="true"]', { timeout: 10_000 });
      expect(await page.textContent('#available')).toBe('unknown while blocks are held');
      // Without operators, nothing asks for the changes: nothing can wait.
      expect(await page.textContent('#changesNote')).toBe(
        'This service has no operators: nothing waits.',
      );
      await page.close();
    } finally {
      await s.close();
    }
  });

  test('shows an operator the pending changes: what each loosens, before and after with units, where it applies, its approvals', async () => {
    const BTC = 100_000_000n;
    const begun = applyAll(
      createLimitsState({
        limits: {
          pegCap: 50n * BTC,
          perWithdrawalCap: BTC,
          rollingWithdrawalBlocks: 144n,
          rollingWithdrawalCap: 10n * BTC,
        },
      }),
      [{ type: 'blockConnected', height: 870_000 }],
    );
    if (!begun.ok) throw begun.error;
    const s = await serveInProcess({
      initial: begun.state,
      adminToken: TOKEN,
      loosening: { delayBlocks: 6, quorum: 2 },
    });
    const propose = async (body: string) => {
      const r = await fetch(`${s.url}/admin/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body,
      });
      expect(r.status).toBe(202);
    };
    try {
      await propose(
        '[{"type":"limitsUpdated","limits":{"perWithdrawalCap":200000000,"pegCap":null}}]',
      );
      await propose('[{"type":"limitsUpdated","limits":{"rollingWithdrawalBlocks":72}}]');
      const page = await browser.newPage({ viewport: { width: 1280, height: 1100 } });
      await page.goto(`${s.url}/`);
      await page.waitForSelector('body[data-loaded="true"]', { timeout: 10_000 });
      // Without a token the panel says what it needs; a wrong one is refused.
      expect(await page.textContent('#changesNote')).toContain('operator token');
      await page.fill('#token', 'not-the-token-at-all');
      await page.click('#showChanges');
      await page.waitForFunction(() =>
        document.getElementById('changesNote')!.textContent!.includes('refused'),
      );
      await page.fill('#token', TOKEN);
      await page.click('#showChanges');
      await page.waitForFunction(() => document.querySelectorAll('#changes tr').length === 2);
      const rows = await page.$$eval('#changes tr', (trs) =>
        trs.map((tr) => Array.from(tr.querySelectorAll('td'), (td) => td.textContent)),
      );
      expect(rows[0]).toEqual([
        '#1',
        'admin',
        'Per withdrawal: 1 BTC → 2 BTC · Peg cap: 50 BTC → none',
        'block 870,006',
        '1 of 2: admin',
      ]);
      expect(rows[1]![2]).toBe('Window: 144 blocks → 72 blocks');
      expect(await page.textContent('#changeCount')).toBe('2');
      // The token stays in this tab: never in the address, never in lasting storage.
      expect(page.url()).not.toContain(TOKEN);
      expect(await page.evaluate(() => localStorage.length)).toBe(0);
      await page.screenshot({ path: `${ARTIFACTS}/dashboard-changes.png`, fullPage: true });
      await page.close();
    } finally {
      await s.close();
    }
  });

  test('under throttle mode with nothing available, it says at which block the room opens, not only the next release', async () => {
    const BTC = 100_000_000n;
    const begun = applyAll(
      createLimitsState({
        limits: { rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: 100n * BTC },
      }),
      [
        { type: 'blockConnected', height: 870_000 },
        { type: 'withdrawalRequested', id: 'a', account: 'x', amount: BTC, height: 869_985 },
        { type: 'withdrawalRequested', id: 'b', account: 'x', amount: 2n * BTC, height: 869_990 },
        { type: 'withdrawalRequested', id: 'c', account: 'x', amount: BTC, height: 869_995 },
        { type: 'throttleKeyAdded', name: 'ops-1', secretHash: hashThrottleSecret(SECRET) },
      ],
    );
    if (!begun.ok) throw begun.error;
    const s = await serveInProcess({
      initial: begun.state,
    });
    try {
      const r = await fetch(`${s.url}/start_throttle`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'ops-1', secret: SECRET }),
      });
      expect(r.status).toBe(200);
      const page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
      await page.goto(`${s.url}/`);
      await page.waitForSelector('body[data-loaded="true"]', { timeout: 10_000 });
      // The throttled window (the longer of 144 and the profile's 18 blocks; the cap 2 BTC)
      // holds 4 BTC: nothing is available. The next release (1 BTC at 870,129) leaves 3 BTC,
      // still over the cap; the one after, at 870,134, brings the window under it.
      expect(await page.textContent('#available')).toBe('0 BTC');
      expect(await page.textContent('#nextRelease')).toBe('1 BTC frees up at block 870,129');
      expect(await page.textContent('#roomAt')).toBe(
        'Room opens at block 870,134, when the window holds less than its cap of 2 BTC',
      );
      // No operator here: the panel says nothing can wait, rather than asking for a token.
      expect(await page.textContent('#changesNote')).toBe(
        'This service has no operators: nothing waits.',
      );
      await page.screenshot({ path: `${ARTIFACTS}/dashboard-throttle-room.png`, fullPage: true });
      await page.close();
    } finally {
      await s.close();
    }
  });

  test('pages and searches 10,000 account entries', async () => {
    const page = await open(1280, 900);
    expect(await value(page, '#entryCount')).toBe('10000');
    expect(await page.$$eval('#entries tr', (rows) => rows.length)).toBe(50);
    expect(await page.textContent('#pageInfo')).toContain('page 1 of 200');
    await page.click('#next');
    expect(await page.textContent('#entries tr td')).toBe('account-00050');
    await page.fill('#search', 'account-09999');
    expect(await page.$$eval('#entries tr', (rows) => rows.length)).toBe(1);
    expect(
      await page.$eval('#entries tr td:nth-child(2)', (e) => (e as HTMLElement).dataset.value),
    ).toBe('5000009999');
    // Amounts with their unit; a per-withdrawal cap of 1 BTC.
    expect(await page.textContent('#entries tr td:nth-child(2)')).toBe('50.00009999 BTC');
    expect(await page.textContent('#entries tr td:nth-child(5)')).toBe('1 BTC');
    await page.close();
  });

  test('shows the throttle banner naming the initiator within a second of throttle mode starting, live from GET /events, on a phone too', async () => {
    // The page is open before throttle mode starts: it must notice by itself, from the
    // stream of changes (GET /events), within a second.
    const page = await open(390, 844);
    expect(await page.isHidden('#throttle')).toBe(true);
    await page.waitForFunction(
      () => document.body.dataset.live === 'true' || !!document.body.dataset.loaded,
    );
    // Connected: the stream's first event (the current limits) has been shown.
    await page.waitForFunction(() => document.body.dataset.live === 'true', undefined, {
      timeout: 5_000,
    });
    const r = await fetch(`${server.url}/start_throttle`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'ops-1', secret: SECRET }),
    });
    expect(r.status).toBe(200);
    const changed = performance.now();
    await page.waitForSelector('#throttle', { state: 'visible', timeout: 1_000 });
    expect(performance.now() - changed).toBeLessThan(1_000);
    expect(await page.isVisible('#throttle')).toBe(true);
    expect(await page.textContent('#initiator')).toBe('ops-1');
    // The overlay shows: the throttled window cap, as the API says.
    expect(await value(page, '#rollingWithdrawalCap')).toBe(
      String((await api('/limits')).rollingWithdrawalCap),
    );
    // Nothing overflows the phone's width.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(
      390,
    );
    await page.screenshot({ path: `${ARTIFACTS}/dashboard-phone.png`, fullPage: true });
    await page.close();
  });

  test('a page on another origin can read /limits, and is blocked from /admin/events', async () => {
    const page = await browser.newPage();
    await page.goto(otherUrl);
    const result = await page.evaluate(
      async ([url, token]) => {
        const read = await fetch(`${url}/limits`).then(
          (r) => `read ${r.status}`,
          (e: Error) => `read blocked: ${e.message}`,
        );
        const write = await fetch(`${url}/admin/events`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: '{"type":"throttleEnded"}',
        }).then(
          (r) => `write ${r.status}`,
          (e: Error) => `write blocked: ${e.message}`,
        );
        return [read, write];
      },
      [server.url, TOKEN] as const,
    );
    expect(result[0]).toBe('read 200');
    expect(result[1]).toMatch(/^write blocked/);
    // And the operator event did not happen: throttle mode is still on.
    expect((await api('/limits')).throttleModeInitiator).toBe('ops-1');
    await page.close();
  });
});
