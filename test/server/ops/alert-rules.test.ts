/**
 * The alerting rules that ship with the package (`docs/peg-limits.rules.yml`): Prometheus's
 * `promtool check rules` accepts them, `promtool test rules` shows each one firing when it
 * must and not when it must not, and every metric they read is one the server exports.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { createLimitsState } from '../../../src/index.js';
import { createMetrics } from '../../../src/server/ops/metrics.js';
import { fencedBlock } from '../../support/doc-blocks.mjs';
import { closeServers, serveInProcess } from '../../support/in-process.js';
import { tempDir } from '../../support/proc.js';
import { HAVE_PROMETHEUS, PROMETHEUS_MISSING, PROMTOOL } from '../../support/promtool.js';
import { TOKEN } from '../../support/tokens.js';

afterAll(closeServers);

const RULES_FILE = 'docs/peg-limits.rules.yml';
const rules = readFileSync(RULES_FILE, 'utf8');

if (!HAVE_PROMETHEUS)
  console.warn(`SKIPPING the alert rules' promtool tests: ${PROMETHEUS_MISSING}`);

test('promtool is there when CI runs the tests', () => {
  if (process.env.CI === 'true') expect(HAVE_PROMETHEUS, PROMETHEUS_MISSING).toBe(true);
});

// Every metric name a rule reads (a histogram's series named by their own suffixes).
function namesInRules(): string[] {
  const exprs = [...rules.matchAll(/^\s+expr: (.+)$/gm)].map((m) => m[1]!);
  return [...new Set(exprs.flatMap((e) => e.match(/peg_limits_[a-z_]+/g) ?? []))].sort();
}

test('every metric the rules read is one the server exports', async () => {
  // A server with every part that has metrics of its own: alerts, the Stacks observer.
  const s = await serveInProcess({
    initial: createLimitsState(),
    adminToken: TOKEN,
    alerts: { urls: ['http://127.0.0.1:9/'] },
    stacksObserver: {
      host: '127.0.0.1',
      port: 0,
      registry: 'SM3VDXK3WZZSA84XXFKAFAF15NNZX32CTSG82JFQ4.sbtc-registry',
      decode: () => {
        throw new Error('no Clarity here');
      },
      memory: { load: async () => ({ blocks: [], head: '' }), save: async () => undefined },
      keepBurnBlocks: 12,
    },
  });
  let exposition: string;
  try {
    exposition = await (await fetch(`${s.url}/metrics`)).text();
  } finally {
    await s.close();
  }
  // Replicas on PostgreSQL add the write lock and the notification queue.
  const replica = await createMetrics({
    state: () => createLimitsState(),
    position: () => 0,
    writable: () => true,
    ready: () => true,
    writeLock: () => ({ waitSeconds: 0, heldSeconds: 0, acquisitions: 0 }) as never,
    notificationQueue: async () => 0,
  });
  exposition += await replica.render();
  const exported = new Set(
    [...exposition.matchAll(/^# TYPE (peg_limits_[a-z_]+) /gm)].map((m) => m[1]!),
  );
  const missing = namesInRules().filter((n) => !exported.has(n));
  expect(namesInRules().length).toBeGreaterThan(10);
  expect(missing).toEqual([]);
});

test('the operating page lists every rule the file holds', () => {
  const page = readFileSync('docs/operating.md', 'utf8');
  const names = [...rules.matchAll(/- alert: (\w+)/g)].map((m) => m[1]!);
  expect(names.filter((n) => !page.includes(`\`${n}\``))).toEqual([]);
});

describe.skipIf(!HAVE_PROMETHEUS)('the shipped alert rules', () => {
  // One check of promtool's alert_rule_test: at `at`, rule `name` fires (with its severity
  // and summary as the file says them, and `labels`) or does not.
  const alertAt = (name: string, labels: Record<string, string> = {}) => {
    const rule = rules.split('- alert: ').find((r) => r.startsWith(`${name}\n`));
    if (rule === undefined) throw new Error(`no rule ${name} in ${RULES_FILE}`);
    const severity = /severity: (\S+)/.exec(rule)![1]!;
    const summary = /summary: (.+)/.exec(rule)![1]!;
    const extra = Object.entries(labels)
      .map(([k, v]) => `\n              ${k}: ${v}`)
      .join('');
    return (at: string, firing: boolean) => `      - eval_time: ${at}
        alertname: ${name}
        exp_alerts:${
          firing
            ? `
          - exp_labels:
              severity: ${severity}${extra}
            exp_annotations:
              summary: ${summary}`
            : ' []'
        }`;
  };
  // Runs `promtool test rules` on the file as it ships and `tests` (the entries under
  // `tests:`, one minute between evaluations) and expects every one to pass.
  const testRules = (tests: string) => {
    const dir = tempDir();
    writeFileSync(
      join(dir, 'tests.yml'),
      `rule_files:\n  - ${join(process.cwd(), RULES_FILE)}\nevaluation_interval: 1m\ntests:\n${tests}\n`,
    );
    const run = spawnSync(PROMTOOL, ['test', 'rules', join(dir, 'tests.yml')], {
      encoding: 'utf8',
    });
    expect(run.status, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/SUCCESS/);
  };

  test("promtool check rules accepts the file, and the page's scrape configuration promtool check config", () => {
    const run = spawnSync(PROMTOOL, ['check', 'rules', RULES_FILE], { encoding: 'utf8' });
    expect(run.status, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/SUCCESS: 17 rules found/);
    const dir = tempDir();
    writeFileSync(join(dir, 'peg-limits.rules.yml'), rules);
    writeFileSync(
      join(dir, 'prometheus.yml'),
      fencedBlock(readFileSync('docs/operating.md', 'utf8'), 'yaml', 'prometheus.yml'),
    );
    const config = spawnSync(PROMTOOL, ['check', 'config', join(dir, 'prometheus.yml')], {
      encoding: 'utf8',
    });
    expect(config.status, config.stdout + config.stderr).toBe(0);
  });

  test('the held-blocks alert fires while any observer holds blocks, and stops once they are released (promtool test rules)', () => {
    const alert = alertAt('PegLimitsBlocksHeld');
    testRules(`  - interval: 1m
    input_series:
      - series: 'peg_limits_observer_held_blocks{job="peg-limits",instance="r0"}'
        values: '0x2 1 2x3 0x5'
      - series: 'peg_limits_observer_held_blocks{job="peg-limits",instance="r1"}'
        values: '0x12'
    alert_rule_test:
${alert('1m', false)}
${alert('4m', true)}
${alert('10m', false)}`);
  });

  test('the mint-window alert fires as soon as less than a tenth of the mint cap is left, and stops when the mints leave (promtool test rules)', () => {
    const alert = alertAt('PegLimitsMintWindowNearlySpent', { job: 'peg-limits', instance: 'r0' });
    // A cap of 1 BTC; a flood spends it in three minutes; the room comes back at minute 9.
    testRules(`  - interval: 1m
    input_series:
      - series: 'peg_limits_rolling_mint_cap{job="peg-limits",instance="r0"}'
        values: '100000000x12'
      - series: 'peg_limits_available_to_mint{job="peg-limits",instance="r0"}'
        values: '100000000 40000000 20000000 0x5 100000000x5'
    alert_rule_test:
${alert('1m', false)}
${alert('4m', true)}
${alert('10m', false)}`);
  });

  test('the incomplete-window alert fires once the tip passes the height at which the window was to complete, not while it approaches it (promtool test rules)', () => {
    const alert = alertAt('PegLimitsWindowIncompletePastItsHeight', {
      job: 'peg-limits',
      instance: 'r0',
    });
    // A late start: complete at 110 from tip 100. A gap at minute 6 moves it to 130.
    testRules(`  - interval: 1m
    input_series:
      - series: 'peg_limits_tip_height{job="peg-limits",instance="r0"}'
        values: '100+2x15'
      - series: 'peg_limits_window_complete{job="peg-limits",instance="r0"}'
        values: '0x15'
      - series: 'peg_limits_window_complete_at{job="peg-limits",instance="r0"}'
        values: '110x5 130x10'
    alert_rule_test:
${alert('3m', false)}
${alert('8m', true)}`);
  });

  test('the incomplete-window alert stays quiet for a window that completes on time (promtool test rules)', () => {
    const alert = alertAt('PegLimitsWindowIncompletePastItsHeight');
    testRules(`  - interval: 1m
    input_series:
      - series: 'peg_limits_tip_height{job="peg-limits",instance="r0"}'
        values: '100+2x15'
      - series: 'peg_limits_window_complete{job="peg-limits",instance="r0"}'
        values: '0x4 1x11'
      - series: 'peg_limits_window_complete_at{job="peg-limits",instance="r0"}'
        values: '110x4 _x11'
    alert_rule_test:
${alert('5m', false)}
${alert('12m', false)}`);
  });

  test('the node-start alert fires when a start from the node failed in the last 15 minutes (promtool test rules)', () => {
    const alert = alertAt('PegLimitsNodeStartFailing', { job: 'peg-limits', instance: 'r0' });
    testRules(`  - interval: 1m
    input_series:
      - series: 'peg_limits_observer_start_failures_total{job="peg-limits",instance="r0"}'
        values: '0x5 1 2x30'
    alert_rule_test:
${alert('4m', false)}
${alert('8m', true)}
${alert('30m', false)}`);
  });

  test('the rejection alert fires at a rejection the node does not show (promtool test rules)', () => {
    const alert = alertAt('PegLimitsRejectionNotShown', { job: 'peg-limits', instance: 'r0' });
    testRules(`  - interval: 1m
    input_series:
      - series: 'peg_limits_observer_rejections_not_shown_total{job="peg-limits",instance="r0"}'
        values: '0x5 1x10'
    alert_rule_test:
${alert('4m', false)}
${alert('7m', true)}`);
  });

  test('the readiness alert fires after 5 minutes not ready, not for a 2-minute catch-up (promtool test rules)', () => {
    const alert = alertAt('PegLimitsNotReady', { job: 'peg-limits', instance: 'r1' });
    testRules(`  - interval: 1m
    input_series:
      - series: 'peg_limits_ready{job="peg-limits",instance="r0"}'
        values: '1x4 0x2 1x10'
      - series: 'peg_limits_ready{job="peg-limits",instance="r1"}'
        values: '1x4 0x12'
    alert_rule_test:
${alert('7m', false)}
${alert('12m', true)}`);
  });

  test('the breaker alert fires at once when any server shows it tripped, and stops when it is cleared (promtool test rules)', () => {
    const alert = alertAt('PegLimitsPegBreakerTripped', {});
    testRules(`  - interval: 1m
    input_series:
      - series: 'peg_limits_peg_breaker_tripped{job="peg-limits",instance="r0"}'
        values: '0x3 1x5 0x5'
      - series: 'peg_limits_peg_breaker_tripped{job="peg-limits",instance="r1"}'
        values: '0x3 1x5 0x5'
    alert_rule_test:
${alert('2m', false)}
${alert('4m', true)}
${alert('11m', false)}`);
  });

  test('the reserves alert fires after ten minutes unknown, not for a reading a few minutes late (promtool test rules)', () => {
    const alert = alertAt('PegLimitsReservesUnknown', {});
    testRules(`  - interval: 1m
    input_series:
      - series: 'peg_limits_peg_integrity{job="peg-limits",instance="r0",state="reserves_unknown"}'
        values: '0x3 1x4 0x3 1x15'
    alert_rule_test:
${alert('7m', false)}
${alert('15m', false)}
${alert('23m', true)}`);
  });

  test('the Bitcoin reader alert fires while readings fail (promtool test rules)', () => {
    const alert = alertAt('PegLimitsBitcoinRpcFailing', { job: 'peg-limits', instance: 'r0' });
    testRules(`  - interval: 1m
    input_series:
      - series: 'peg_limits_bitcoin_rpc_failures_total{job="peg-limits",instance="r0"}'
        values: '0x5 1+1x5 6x30'
    alert_rule_test:
${alert('4m', false)}
${alert('8m', true)}
${alert('30m', false)}`);
  });

  test('the delivery alert fires while deliveries keep failing, not at one failure (promtool test rules)', () => {
    const alert = alertAt('PegLimitsAlertDeliveriesFailing', { job: 'peg-limits', instance: 'r0' });
    testRules(`  - interval: 1m
    input_series:
      - series: 'peg_limits_alert_delivery_failures_total{job="peg-limits",instance="r0"}'
        values: '0x5 1x5 1+1x10'
    alert_rule_test:
${alert('9m', false)}
${alert('16m', true)}`);
  });

  test('the throttle alert fires while throttle mode is on (promtool test rules)', () => {
    const alert = alertAt('PegLimitsThrottleActive', { job: 'peg-limits', instance: 'r0' });
    testRules(`  - interval: 1m
    input_series:
      - series: 'peg_limits_throttle_active{job="peg-limits",instance="r0"}'
        values: '0x3 1x3 0x3'
    alert_rule_test:
${alert('2m', false)}
${alert('5m', true)}
${alert('8m', false)}`);
  });

  test('the write-lock alert fires when three replicas hold the lock 90% of the time for 10 minutes, not at 50% (promtool test rules)', () => {
    // Three replicas' running totals, one sample a minute for 30 minutes: held 0.3 s a
    // second each (0.9 summed) in one series set, 1/6 s each (0.5 summed) in the other.
    const series = (job: string, perMinute: number) =>
      [0, 1, 2]
        .map(
          (r) =>
            `      - series: 'peg_limits_write_lock_held_seconds_total{job="${job}",instance="r${r}"}'\n        values: '0+${perMinute}x30'`,
        )
        .join('\n');
    const alert = alertAt('PegLimitsWriteLockSaturated');
    const test = (perMinute: number, checks: string) => `  - interval: 1m
    input_series:
${series('busy', perMinute)}
    alert_rule_test:
${checks}`;
    testRules(
      `${test(18, `${alert('10m', false)}\n${alert('20m', true)}`)}\n${test(10, alert('20m', false))}`,
    );
  });

  test('the notification-queue alert fires when the queue has been over 10% full for 5 minutes, not at 5% (promtool test rules)', () => {
    // Three replicas read the same queue; one series at 20% from minute 3 on, one at 5%.
    const test = (usage: number, firing: boolean) => `  - interval: 1m
    input_series:
${[0, 1, 2]
  .map(
    (r) =>
      `      - series: 'peg_limits_notification_queue_usage{job="peg-limits",instance="r${r}"}'\n        values: '0x2 ${usage}x20'`,
  )
  .join('\n')}
    alert_rule_test:
      - eval_time: 6m
        alertname: PegLimitsNotificationQueueFilling
        exp_alerts: []
      - eval_time: 10m
        alertname: PegLimitsNotificationQueueFilling
        exp_alerts:${
          firing
            ? `
          - exp_labels:
              severity: page
            exp_annotations:
              summary: PostgreSQL's notification queue is over 10% full, so a session that listens is not reading (a hung replica?); when it is full every change is refused.`
            : ' []'
        }`;
    testRules(`${test(0.2, true)}\n${test(0.05, false)}`);
  });

  test('the pending-change alert fires while a change waits, on any replica, and stops once it is settled (promtool test rules)', () => {
    const alert = alertAt('PegLimitsChangePending');
    testRules(`  - interval: 1m
    input_series:
      - series: 'peg_limits_pending_changes{job="peg-limits",instance="r0"}'
        values: '0x2 1x5 0x5'
      - series: 'peg_limits_pending_changes{job="peg-limits",instance="r1"}'
        values: '0x12'
    alert_rule_test:
${alert('1m', false)}
${alert('4m', true)}
${alert('10m', false)}`);
  });

  test('the credentials alert fires at a burst of failures, not at a few (promtool test rules)', () => {
    const alert = alertAt('PegLimitsCredentialFailures');
    // /start_throttle: 2 failures a minute, then 10 a minute from minute 10; /admin/events: 1 a minute.
    testRules(`  - interval: 1m
    input_series:
      - series: 'peg_limits_auth_failures_total{job="peg-limits",instance="r0",route="/start_throttle"}'
        values: '0+2x10 20+10x10'
      - series: 'peg_limits_auth_failures_total{job="peg-limits",instance="r0",route="/admin/events"}'
        values: '0+1x20'
    alert_rule_test:
${alert('9m', false)}
${alert('15m', true)}`);
  });

  test('the store alert fires once a server has taken no changes for 2 minutes, not for a 1-minute outage (promtool test rules)', () => {
    // r0: out for a minute (minute 5), back; r1: out from minute 5 on.
    const alert = alertAt('PegLimitsStoreUnavailable', { instance: 'r1', job: 'peg-limits' });
    testRules(`  - interval: 1m
    input_series:
      - series: 'peg_limits_store_available{job="peg-limits",instance="r0"}'
        values: '1x4 0 1x10'
      - series: 'peg_limits_store_available{job="peg-limits",instance="r1"}'
        values: '1x4 0x10'
    alert_rule_test:
${alert('6m', false)}
${alert('8m', true)}`);
  });
});
