/**
 * What operators need: health, readiness and Prometheus metrics, read with a
 * parser of our own, checked by Prometheus's promtool, and scraped by Prometheus itself.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  createLimitsState,
  decodeJson,
  encodeJson,
  generateThrottleSecret,
  getLimits,
  hashThrottleSecret,
  pendingChanges,
  windowOf,
} from '../../../src/index.js';
import type { RunningServer } from '../../../src/server/node-http/serve.js';
import { closeServers, serveInProcess } from '../../support/in-process.js';
import { freePort, killGroup, tempDir, waitFor } from '../../support/proc.js';
import { parseExposition, sampleOf } from '../../support/prometheus-text.js';
import {
  checkMetrics,
  HAVE_PROMETHEUS,
  linesOf,
  PROMETHEUS,
  PROMETHEUS_MISSING,
} from '../../support/promtool.js';
import { TOKEN } from '../../support/tokens.js';

afterAll(closeServers);

if (!HAVE_PROMETHEUS) console.warn(`SKIPPING the Prometheus tests: ${PROMETHEUS_MISSING}`);

test('Prometheus is there when CI runs the tests', () => {
  if (process.env.CI === 'true') expect(HAVE_PROMETHEUS, PROMETHEUS_MISSING).toBe(true);
});

const SECRET = generateThrottleSecret();
let server: RunningServer;

async function start(metrics = true): Promise<RunningServer> {
  const s = await serveInProcess({
    initial: createLimitsState({
      limits: { rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: 10n ** 12n },
    }),
    adminToken: TOKEN,
    metrics,
  });
  return s;
}

async function post(path: string, body: unknown, operator = true) {
  const r = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(operator ? { authorization: `Bearer ${TOKEN}` } : {}),
    },
    body: encodeJson(body),
  });
  return { status: r.status, body: await r.text() };
}

async function scrape() {
  const r = await fetch(`${server.url}/metrics`);
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  expect(r.headers.get('access-control-allow-origin')).toBeNull();
  const text = await r.text();
  return { text, e: parseExposition(text) };
}

beforeAll(async () => {
  server = await start();
  expect(server.metrics).toBe(true);
  const entries: Record<string, { perWithdrawalCap: bigint }> = {};
  for (let i = 0; i < 7; i++) entries[`entry-${i}`] = { perWithdrawalCap: 1000n };
  const steps = [
    [
      {
        type: 'limitsSet',
        limits: {
          rollingWithdrawalBlocks: 144n,
          rollingWithdrawalCap: 10n ** 12n,
          accountCaps: entries,
        },
      },
    ],
    [{ type: 'blockConnected', height: 800_000 }],
    [
      {
        type: 'withdrawalRequested',
        id: 'a',
        account: 'alice',
        amount: 9_007_199_254n,
        height: 800_000,
      },
      { type: 'withdrawalRequested', id: 'b', account: 'bob', amount: 5n, height: 800_000 },
    ],
    [{ type: 'throttleKeyAdded', name: 'ops-1', secretHash: hashThrottleSecret(SECRET) }],
  ];
  for (const events of steps) expect((await post('/admin/events', events)).status).toBe(200);
});
afterAll(() => server?.close());

describe('health and readiness', () => {
  test('GET /healthz is 200 {"status":"ok"} and GET /readyz 200 while the log takes writes, neither with CORS', async () => {
    for (const [path, status] of [
      ['/healthz', 'ok'],
      ['/readyz', 'ready'],
    ] as const) {
      const r = await fetch(`${server.url}${path}`, { headers: { origin: 'https://x.example' } });
      expect(r.status).toBe(200);
      expect(decodeJson(await r.text())).toEqual({ status });
      expect(r.headers.get('access-control-allow-origin')).toBeNull();
      const pre = await fetch(`${server.url}${path}`, { method: 'OPTIONS' });
      expect(pre.status).toBe(405);
    }
  });
});

describe('GET /metrics', () => {
  test('peg_limits_auth_failures_total counts the requests refused for their credentials, by route, from 0', async () => {
    const count = async (route: string) =>
      sampleOf((await scrape()).e, 'peg_limits_auth_failures_total', { route });
    const before = { events: await count('/admin/events'), brake: await count('/start_throttle') };
    expect(before.events).toBeGreaterThanOrEqual(0);
    expect(before.brake).toBeGreaterThanOrEqual(0);
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${server.url}/admin/events`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: 'Bearer not-the-token-of-anyone',
        },
        body: '[]',
      });
      expect(r.status).toBe(401);
    }
    expect(
      (await post('/start_throttle', { name: 'ops-1', secret: 'wrong-secret-0123456789ab' }, false))
        .status,
    ).toBe(401);
    // A request refused for something else is no credential failure.
    expect((await post('/admin/events', [{ type: 'nope' }])).status).toBe(400);
    expect(await count('/admin/events')).toBe(before.events! + 3);
    expect(await count('/start_throttle')).toBe(before.brake! + 1);
  });

  test('has every metric of docs/operating.md with its type, and the default process metrics', async () => {
    const { e } = await scrape();
    const expected: Record<string, string> = {
      peg_limits_available_to_withdraw: 'gauge',
      peg_limits_rolling_withdrawn: 'gauge',
      peg_limits_rolling_withdrawal_cap: 'gauge',
      peg_limits_throttle_active: 'gauge',
      peg_limits_tip_height: 'gauge',
      peg_limits_log_position: 'gauge',
      peg_limits_account_entries: 'gauge',
      peg_limits_pending_changes: 'gauge',
      peg_limits_auth_failures_total: 'counter',
      peg_limits_http_requests_total: 'counter',
      peg_limits_http_request_duration_seconds: 'histogram',
      peg_limits_persist_duration_seconds: 'histogram',
      peg_limits_store_available: 'gauge',
      process_cpu_user_seconds_total: 'counter',
      nodejs_heap_size_used_bytes: 'gauge',
    };
    for (const [name, type] of Object.entries(expected)) expect(e.types.get(name), name).toBe(type);
    expect(e.help.get('peg_limits_available_to_withdraw')).toMatch(/exact below 2\^53/);
  });

  test('its values equal what the API answers, and follow every change', async () => {
    const check = async () => {
      const { e } = await scrape();
      const limits = decodeJson(await (await fetch(`${server.url}/limits`)).text()) as Record<
        string,
        unknown
      >;
      const window = decodeJson(await (await fetch(`${server.url}/window`)).text()) as Record<
        string,
        unknown
      >;
      expect(sampleOf(e, 'peg_limits_available_to_withdraw')).toBe(
        Number(limits.availableToWithdraw),
      );
      expect(sampleOf(e, 'peg_limits_rolling_withdrawn')).toBe(Number(window.withdrawn));
      expect(sampleOf(e, 'peg_limits_rolling_withdrawal_cap')).toBe(
        Number(limits.rollingWithdrawalCap),
      );
      expect(sampleOf(e, 'peg_limits_throttle_active')).toBe(
        limits.throttleModeInitiator === null ? 0 : 1,
      );
      expect(sampleOf(e, 'peg_limits_tip_height')).toBe(Number(window.tip));
      expect(sampleOf(e, 'peg_limits_account_entries')).toBe(
        Object.keys(limits.accountCaps as object).length,
      );
      expect(sampleOf(e, 'peg_limits_log_position')).toBe(server.position);
      expect(sampleOf(e, 'peg_limits_pending_changes')).toBe(
        pendingChanges(server.service.state).length,
      );
      expect(sampleOf(e, 'peg_limits_store_available')).toBe(1);
      // And the same as the library says of the server's state.
      expect(sampleOf(e, 'peg_limits_available_to_withdraw')).toBe(
        Number(getLimits(server.service.state).availableToWithdraw),
      );
      expect(sampleOf(e, 'peg_limits_rolling_withdrawn')).toBe(
        Number(windowOf(server.service.state)!.withdrawn),
      );
      return e;
    };
    const before = await check();
    expect(sampleOf(before, 'peg_limits_available_to_withdraw')).toBe(10 ** 12 - 9_007_199_259);
    expect(sampleOf(before, 'peg_limits_account_entries')).toBe(7);
    expect((await post('/start_throttle', { name: 'ops-1', secret: SECRET }, false)).status).toBe(
      200,
    );
    const after = await check();
    expect(sampleOf(after, 'peg_limits_throttle_active')).toBe(1);
    expect((await post('/admin/events', [{ type: 'throttleEnded' }])).status).toBe(200);
    expect(sampleOf(await check(), 'peg_limits_throttle_active')).toBe(0);
  });

  test('requests are labelled with the route pattern, never the raw path, and persists are timed', async () => {
    await fetch(`${server.url}/limits/alice%20smith`);
    await fetch(`${server.url}/limits/bob/withdrawals/17`);
    await fetch(`${server.url}/no/such/path`);
    const { e } = await scrape();
    expect(
      sampleOf(e, 'peg_limits_http_requests_total', { route: '/limits/{account}', status: '404' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sampleOf(e, 'peg_limits_http_requests_total', {
        route: '/limits/{account}/withdrawals/{amount}',
        status: '200',
      }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sampleOf(e, 'peg_limits_http_requests_total', { route: 'none', status: '404' }),
    ).toBeGreaterThanOrEqual(1);
    const values = e.samples.flatMap((s) => Object.values(s.labels));
    expect(values.filter((v) => /alice|bob|no\/such/.test(v))).toEqual([]);
    // Every accepted change was made durable once, and timed.
    const persisted = sampleOf(e, 'peg_limits_persist_duration_seconds_count')!;
    expect(persisted).toBeGreaterThanOrEqual(4);
    expect(sampleOf(e, 'peg_limits_persist_duration_seconds_sum')).toBeGreaterThan(0);
  });

  test('HEAD /metrics answers as GET /metrics does without the body, metrics on or off (--no-metrics)', async () => {
    const head = await fetch(`${server.url}/metrics`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    const off = await start(false);
    try {
      expect(off.metrics).toBe(false);
      const r = await fetch(`${off.url}/metrics`);
      expect(r.status).toBe(404);
    } finally {
      await off.close();
    }
  });

  test.skipIf(!HAVE_PROMETHEUS)(
    "promtool check metrics: ours are clean; prom-client's default gauges named *_total are all it reports",
    async () => {
      const { text } = await scrape();
      const ours = linesOf(text, 'peg_limits_');
      expect(ours).toContain('peg_limits_persist_duration_seconds_bucket');
      // One writer, no shared write lock and no notifications: none of the replicas' figures.
      expect(ours).not.toContain('peg_limits_write_');
      expect(ours).not.toContain('peg_limits_notification_queue_usage');
      const clean = checkMetrics(`${ours}\n`);
      expect(clean.status, clean.output).toBe(0);
      // The whole exposition parses; its only lint problems are three gauges prom-client's
      // default metrics name with a counter's suffix.
      const whole = checkMetrics(text);
      const problems = whole.output.trim().split('\n').sort();
      expect(problems).toEqual([
        'nodejs_active_handles_total non-counter metrics should not have "_total" suffix',
        'nodejs_active_requests_total non-counter metrics should not have "_total" suffix',
        'nodejs_active_resources_total non-counter metrics should not have "_total" suffix',
      ]);
    },
  );
});

describe.skipIf(!HAVE_PROMETHEUS)('Prometheus scraping the service', () => {
  test('after a throttle start, its query API says peg_limits_throttle_active is 1', async () => {
    const dir = tempDir();
    const port = await freePort();
    const target = server.url.replace('http://', '');
    const config = join(dir, 'prometheus.yml');
    writeFileSync(
      config,
      `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: peg-limits\n    static_configs:\n      - targets: ['${target}']\n`,
    );
    const child = spawn(
      PROMETHEUS,
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], detached: true },
    );
    let log = '';
    child.stderr!.on('data', (c: Buffer) => {
      log += c.toString();
    });
    const query = async (): Promise<string | undefined> => {
      try {
        const r = await fetch(
          `http://127.0.0.1:${port}/api/v1/query?query=peg_limits_throttle_active`,
        );
        const body = (await r.json()) as {
          data?: { result?: Array<{ value: [number, string] }> };
        };
        return body.data?.result?.[0]?.value[1];
      } catch {
        return undefined;
      }
    };
    try {
      await waitFor(async () => (await query()) === '0', 20_000, 100).catch(() => {
        throw new Error(`Prometheus never scraped a 0: ${log.slice(-2000)}`);
      });
      expect((await post('/start_throttle', { name: 'ops-1', secret: SECRET }, false)).status).toBe(
        200,
      );
      await waitFor(async () => (await query()) === '1', 20_000, 100);
      expect(await query()).toBe('1');
    } finally {
      killGroup({ child } as unknown as Parameters<typeof killGroup>[0]);
      expect((await post('/admin/events', [{ type: 'throttleEnded' }])).status).toBe(200);
    }
  }, 60_000);
});
