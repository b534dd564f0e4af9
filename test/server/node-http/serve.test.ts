import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import {
  createLimitsState,
  decodeJson,
  generateThrottleSecret,
  type HttpResponse,
  hashThrottleSecret,
} from '../../../src/index.js';
import { openDataLog, StoreError } from '../../../src/server/data-folder/data-log.js';
import { type RunningServer, startServer } from '../../../src/server/node-http/serve.js';
import { readDataSnapshot } from '../../support/data-snapshot.js';
import { closeServers, serveInProcess } from '../../support/in-process.js';
import { expectDocumented } from '../../support/openapi.js';
import {
  CLI,
  killGroup,
  type Proc,
  runToEnd,
  spawnServer,
  tempDir,
  waitFor,
} from '../../support/proc.js';
import { TOKEN } from '../../support/tokens.js';

async function send(
  url: string,
  path: string,
  init: RequestInit = {},
): Promise<HttpResponse & { json: Record<string, unknown> }> {
  const r = await fetch(`${url}${path}`, init);
  const body = await r.text();
  const headers: Record<string, string> = {};
  r.headers.forEach((v, k) => {
    headers[k] = v;
  });
  return { status: r.status, headers, body, json: decodeJson(body) as Record<string, unknown> };
}

function events(value: unknown, token = TOKEN): RequestInit {
  return {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: typeof value === 'string' ? value : JSON.stringify(value),
  };
}

/** The body of POST /start_throttle for key ops-1. */
function throttleWith(secret: string): RequestInit {
  return {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'ops-1', secret }),
  };
}

const running: RunningServer[] = [];
const procs: Proc[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.close();
  await closeServers();
  for (const p of procs.splice(0)) killGroup(p);
});

/** Runs `peg-limits serve` with `args`, stopped after the test. */
async function serve(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Proc> {
  const p = await spawnServer('node', [CLI, 'serve', ...args], env);
  procs.push(p);
  return p;
}

// What opening the folder met is said first, as the command does.
const start = (dir: string, log?: (line: string) => void) =>
  serveInProcess({
    dir,
    initial: createLimitsState({
      limits: { rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: 1000n },
    }),
    adminToken: TOKEN,
    logRequestText: log,
  });

describe('the server over a loopback port', () => {
  test('serves every endpoint, as the document describes, and keeps its state across a restart', async () => {
    const dir = tempDir();
    const secret = generateThrottleSecret();
    let s = await start(dir);
    expect(s.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const first = await send(s.url, '/limits');
    expectDocumented('/limits', 'GET', first);
    expect(first.json.availableToWithdraw).toBe(1000n);

    const fed = await send(
      s.url,
      '/admin/events',
      events(
        `[{"type":"blockConnected","height":870000},` +
          `{"type":"withdrawalRequested","id":"w1","account":"alice","amount":300,"height":870000},` +
          `{"type":"accountLimitsSet","account":"alice","limits":{"pegCap":9223372036854775807}},` +
          `{"type":"throttleKeyAdded","name":"ops-1","secretHash":"${hashThrottleSecret(secret)}"}]`,
      ),
    );
    expectDocumented('/admin/events', 'POST', fed);
    expect(fed.status).toBe(200);
    expect(fed.json.availableToWithdraw).toBe(700n);
    // Every answer says the log position it reflects: here the first batch.
    expect(fed.headers['peg-limits-position']).toBe('1');
    expect((await send(s.url, '/limits')).headers['peg-limits-position']).toBe('1');

    const alice = await send(s.url, '/limits/alice');
    expectDocumented('/limits/{account}', 'GET', alice);
    expect(alice.status).toBe(201);
    expect(alice.body).toContain('"pegCap":9223372036854775807');
    const bob = await send(s.url, '/limits/bob');
    expectDocumented('/limits/{account}', 'GET', bob);
    expect(bob.status).toBe(404);

    const throttle = await send(s.url, '/start_throttle', throttleWith(secret));
    expectDocumented('/start_throttle', 'POST', throttle);
    expect(throttle.json.throttleModeInitiator).toBe('ops-1');
    expect(throttle.json.rollingWithdrawalCap).toBe(1000n);
    const refused = await send(s.url, '/start_throttle', throttleWith(generateThrottleSecret()));
    expectDocumented('/start_throttle', 'POST', refused);
    expect(refused.status).toBe(401);
    const openapi = await send(s.url, '/openapi.json');
    expect(openapi.json.openapi).toBe('3.1.0');
    const before = (await send(s.url, '/limits')).body;
    // One line per accepted request after the header, its audit record: the throttle start
    // as its event, by the key that pulled the brake.
    const lines = readFileSync(join(dir, 'journal.jsonl'), 'utf8').trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toBe('{"format":"peg-limits/journal","after":0}');
    expect(lines[2]).toMatch(
      /^\{"position":2,"at":"[^"]+","actor":\{"kind":"throttleKey","name":"ops-1"\},"requestId":"[^"]+","remote":"127\.0\.0\.1","events":\[\{"type":"throttleStarted","initiator":"ops-1"\}\],"alerts":\[\{"type":"throttleStarted","initiator":"ops-1"\}\],"hash":"[0-9a-f]{64}"\}$/,
    );

    // A clean stop writes a snapshot of both batches and starts a fresh journal after them.
    await s.close();
    expect(readFileSync(join(dir, 'journal.jsonl'), 'utf8')).toBe(
      '{"format":"peg-limits/journal","after":2}\n',
    );
    expect(readFileSync(join(dir, 'snapshot.json'), 'utf8')).toMatch(
      /^\{"format":"peg-limits\/data-snapshot","version":2,"seq":2\}\n\{"head":\{"format":"peg-limits\/snapshot"/,
    );
    expect(readDataSnapshot(dir).seq).toBe(2n);
    s = await start(dir);
    const after = await send(s.url, '/limits');
    expect(after.body).toBe(before);
    expect(after.headers['peg-limits-position']).toBe('2');
  });

  test('a batch of operator events is all or nothing, on disk too', async () => {
    const dir = tempDir();
    const s = await start(dir);
    const r = await send(
      s.url,
      '/admin/events',
      events([
        { type: 'blockConnected', height: 5 },
        { type: 'blockConnected', height: 4 },
      ]),
    );
    expect(r.status).toBe(409);
    expectDocumented('/admin/events', 'POST', r);
    expect(s.service.state.tip).toBeNull();
    expect(readFileSync(join(dir, 'journal.jsonl'), 'utf8')).toBe(
      '{"format":"peg-limits/journal","after":0}\n',
    );
  });

  test('an oversized body is 413', async () => {
    const s = await start(tempDir());
    const r = await send(
      s.url,
      '/admin/events',
      events(`[${'{"type":"throttleEnded"},'.repeat(50_000)}{"type":"throttleEnded"}]`),
    );
    expect(r.status).toBe(413);
  });
});

describe("startServer's options say what they are", () => {
  test("connectionLimits takes the connections' limits only, and refuses caps by name", async () => {
    const open = () => openDataLog({ dir: tempDir(), initial: createLimitsState() });
    const log = await open();
    await expect(startServer({ log, port: 0, limits: { pegCap: 5n } as never })).rejects.toThrow(
      /startServer\(\{ limits \}\) takes the connections' limits .* not caps: pegCap/,
    );
    await log.close();
    const s = await startServer({
      log: await open(),
      port: 0,
      connectionLimits: { maxConnections: 3 },
    });
    running.push(s);
    expect(s.connectionLimits.maxConnections).toBe(3);
    expect(s.limits).toBe(s.connectionLimits);
    // The old name still works, as a deprecated alias.
    const old = await startServer({ log: await open(), port: 0, limits: { maxConnections: 4 } });
    running.push(old);
    expect(old.limits.maxConnections).toBe(4);
  });
});

describe('HEAD over a real socket', () => {
  test('HEAD is the GET answer without a body, and the connection stays usable', async () => {
    const s = await start(tempDir());
    const get = await send(s.url, '/limits');
    // Two requests on one kept-alive connection: a body sent after the HEAD answer would
    // be read as the start of the second answer.
    const answers = await new Promise<string>((resolve, reject) => {
      const { hostname, port } = new URL(s.url);
      const socket = connect(Number(port), hostname, () => {
        socket.write(
          `HEAD /limits HTTP/1.1\r\nhost: x\r\n\r\nGET /limits HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`,
        );
      });
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => {
        text += chunk;
      });
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    const [head, second] = answers.split(/(?=HTTP\/1\.1 )/);
    expect(head).toMatch(/^HTTP\/1\.1 200 /);
    expect(head).toContain(`content-length: ${Buffer.byteLength(get.body)}`);
    expect(head!.endsWith('\r\n\r\n')).toBe(true);
    expect(second).toMatch(/^HTTP\/1\.1 200 /);
    expect(second!.endsWith(get.body)).toBe(true);
    const viaFetch = await fetch(`${s.url}/limits`, { method: 'HEAD' });
    expect(viaFetch.status).toBe(200);
    expect(await viaFetch.text()).toBe('');
    const refused = await fetch(`${s.url}/start_throttle`, { method: 'HEAD' });
    expect(refused.status).toBe(405);
    expect(refused.headers.get('allow')).toBe('POST');
  });
});

describe('the journal', () => {
  test('a journal of 0.1 (without a header) is read, and appended to', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'journal.jsonl'), '[{"type":"blockConnected","height":7}]\n');
    const s = await start(dir);
    expect(s.service.state.tip).toBe(7);
  });

  test('a torn last line is dropped with a warning and cut off the file', async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, 'journal.jsonl'),
      '[{"type":"blockConnected","height":7}]\n[{"type":"blockConn',
    );
    const warnings: string[] = [];
    const s = await start(dir, (line) => warnings.push(line));
    expect(s.service.state.tip).toBe(7);
    expect(warnings.join('\n')).toMatch(/journal\.jsonl:2: dropped a last line cut short/);
    await send(s.url, '/admin/events', events({ type: 'blockConnected', height: 8 }));
    // The old line stays as it was; the new one is an audit record, the first of its chain.
    const [old, added, rest] = readFileSync(join(dir, 'journal.jsonl'), 'utf8').split('\n');
    expect(old).toBe('[{"type":"blockConnected","height":7}]');
    expect(added).toMatch(
      /^\{"position":2,.*"events":\[\{"type":"blockConnected","height":8\}\],"hash":"[0-9a-f]{64}"\}$/,
    );
    expect(rest).toBe('');
  });

  test('damage anywhere else refuses to start, naming the line', async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, 'journal.jsonl'),
      '[{"type":"blockConnected","height":7}]\nnot json\n[{"type":"throttleEnded"}]\n',
    );
    const open = () => openDataLog({ dir, initial: createLimitsState() });
    await expect(open()).rejects.toThrow(/journal\.jsonl:2: the journal is damaged/);
    await expect(open()).rejects.toBeInstanceOf(StoreError);
  });

  test('an event that no longer applies refuses to start, naming the line', async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, 'journal.jsonl'),
      '[{"type":"blockConnected","height":7}]\n[{"type":"blockConnected","height":6}]\n',
    );
    await expect(start(dir)).rejects.toThrow(/journal\.jsonl:2: cannot replay/);
  });
});

describe('peg-limits serve (the command)', () => {
  test('prints its address first, serves, and exits cleanly on SIGTERM', async () => {
    const dir = tempDir();
    const p = await serve(['--port', '0', '--data', dir]);
    expect(p.stdout.split('\n')[0]).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+$/);
    const r = await send(p.url, '/limits');
    expect(r.json.rollingWithdrawalBlocks).toBe(144n);
    expect(r.json.pegCap).toBe(100_000_000_000n);
    const admin = await send(p.url, '/admin/events', events({ type: 'throttleEnded' }));
    expect(admin.status).toBe(404);
    await waitFor(() => /GET \/limits 200/.test(p.stderr));
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    await waitFor(() => /SIGTERM: finishing requests in flight/.test(p.stderr));
  });

  test('npm start serves on the embedded configuration, passing arguments through', async () => {
    const p = await spawnServer('npm', [
      'start',
      '--silent',
      '--',
      '--port',
      '0',
      '--data',
      tempDir(),
      '--quiet',
    ]);
    procs.push(p);
    const r = await send(p.url, '/limits');
    expect(r.status).toBe(200);
    expect(r.json.perDepositMinimum).toBe(10_000n);
  });

  test('SIGTERM lets a request in flight finish, journaled, before the process exits', async () => {
    const dir = tempDir();
    const p = await serve(['--port', '0', '--data', dir], {
      PEG_LIMITS_ADMIN_TOKEN: TOKEN,
    });
    const body = '{"type":"blockConnected","height":42}';
    const url = new URL(`${p.url}/admin/events`);
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${TOKEN}`,
            'content-length': body.length,
          },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('error', reject);
      // Half the body now, the signal, then the rest: the request is in flight when the signal lands.
      req.write(body.slice(0, 10));
      setTimeout(() => {
        p.child.kill('SIGTERM');
        setTimeout(() => req.end(body.slice(10)), 300);
      }, 100);
    });
    const r = await answer;
    expect(r.status).toBe(200);
    expect(await p.exited).toBe(0);
    // The clean stop wrote the batch into the snapshot and started a fresh journal.
    const snapshot = readDataSnapshot(dir);
    expect(snapshot.seq).toBe(1n);
    expect(snapshot.head.tip).toBe(42n);
    expect(readFileSync(join(dir, 'journal.jsonl'), 'utf8')).toBe(
      '{"format":"peg-limits/journal","after":1}\n',
    );
  });

  test('--quiet turns the request log off', async () => {
    const p = await serve(['--host', '127.0.0.2', '--port', '0', '--data', tempDir(), '--quiet']);
    expect(p.url).toMatch(/^http:\/\/127\.0\.0\.2:\d+$/);
    await send(p.url, '/limits');
    p.child.kill('SIGINT');
    expect(await p.exited).toBe(0);
    expect(p.stderr).not.toMatch(/GET \/limits/);
  });

  test('a bad configuration or option stops it with a clear message', async () => {
    const dir = tempDir();
    const config = join(dir, 'config.json');
    writeFileSync(config, '{"limits":{"rollingWithdrawalBlocks":144}}');
    const bad = await runToEnd('node', [
      CLI,
      'serve',
      '--config',
      config,
      '--port',
      '0',
      '--data',
      dir,
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /invalid configuration: .*config\.json: limits\.rollingWithdrawalCap: rollingWithdrawalBlocks and rollingWithdrawalCap/,
    );
    writeFileSync(config, '{"limit":{}}');
    expect(
      (await runToEnd('node', [CLI, 'serve', '--config', config, '--data', dir])).stderr,
    ).toMatch(/unknown field "limit"/);
    expect((await runToEnd('node', [CLI, 'serve', '--port', 'x'])).stderr).toMatch(
      /--port must be/,
    );
    expect((await runToEnd('node', [CLI, 'serve', '--nope'])).code).toBe(2);
    expect((await runToEnd('node', [CLI, 'frobnicate'])).stderr).toMatch(/unknown command/);
    const format = await runToEnd('node', [CLI, 'serve', '--log-format', 'xml']);
    expect(format.code).toBe(2);
    expect(format.stderr).toMatch(/--log-format takes text or json, got xml/);
  });

  test("--log-format json writes one object a line (level, time, msg, a request's route pattern), without the requests under --quiet", async () => {
    const dir = tempDir();
    const p = await serve(
      ['--port', '0', '--data', dir, '--log-format', 'json', '--snapshot-every', '1'],
      { PEG_LIMITS_ADMIN_TOKEN: TOKEN },
    );
    await send(p.url, '/limits/alice%20smith');
    await send(p.url, '/admin/events', events({ type: 'blockConnected', height: 5 }));
    await waitFor(() => /compacted/.test(p.stderr), 5_000);
    killGroup(p, 'SIGTERM');
    await p.exited;
    const lines = p.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const l of lines) {
      expect(typeof l.level).toBe('number');
      expect(typeof l.time).toBe('number');
      expect(typeof l.msg).toBe('string');
    }
    const requests = lines.filter((l) => l.msg === 'request');
    expect(requests.map((r) => [r.method, r.route, r.status, r.position])).toEqual([
      ['GET', '/limits/{account}', 404, 0],
      ['POST', '/admin/events', 200, 1],
    ]);
    expect(typeof requests[0]!.ms).toBe('number');
    expect(JSON.stringify(lines)).not.toContain('alice');
    const messages = lines.map((l) => l.msg as string);
    expect(messages.some((m) => m.startsWith('opened '))).toBe(true);
    expect(messages.some((m) => m.startsWith('compacted: '))).toBe(true);
    // Quiet: no request lines.
    const q = await serve(['--port', '0', '--data', tempDir(), '--log-format', 'json', '--quiet']);
    await send(q.url, '/limits');
    killGroup(q, 'SIGTERM');
    await q.exited;
    expect(q.stderr).not.toContain('"request"');
  });

  test('the request lines of a burst are all written, before any message that follows them, and those waiting at a stop too', async () => {
    const p = await serve(['--port', '0', '--data', tempDir()]);
    const paths = Array.from({ length: 300 }, (_, i) => `/limits/burst-${i}`);
    await Promise.all(paths.map((path) => send(p.url, path)));
    killGroup(p, 'SIGTERM');
    await p.exited;
    const lines = p.stderr.trim().split('\n');
    const requests = lines.filter((l) => l.startsWith('GET /limits/burst-'));
    expect(requests.map((l) => l.split(' ')[1]).sort()).toEqual(paths.sort());
    const stop = lines.findIndex((l) => l.startsWith('SIGTERM: finishing requests'));
    expect(stop).toBeGreaterThan(lines.lastIndexOf(requests.at(-1)!));
  });

  test('a damaged journal stops it with the line named', async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, 'journal.jsonl'),
      '[{"type":"blockConnected","height":7}]\n{oops\n[]\n',
    );
    const r = await runToEnd('node', [CLI, 'serve', '--port', '0', '--data', dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/journal\.jsonl:2: the journal is damaged/);
    expect(r.stdout).toBe('');
  });

  test('a configuration file sets the limits, the profile and the keys', async () => {
    const dir = tempDir();
    const secret = generateThrottleSecret();
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        historyBlocks: 100,
        limits: { pegCap: 5, accountCaps: { alice: { perWithdrawalCap: 1 } } },
        throttleProfile: {
          perWithdrawalCap: 2,
          rollingWithdrawalBlocks: 3,
          rollingWithdrawalCap: 4,
        },
        throttleKeys: [{ name: 'ops-1', secretHash: hashThrottleSecret(secret) }],
      }),
    );
    const p = await serve(['--config', config, '--port', '0', '--data', dir, '--quiet']);
    const r = await send(p.url, '/start_throttle', throttleWith(secret));
    expect(r.json).toMatchObject({
      pegCap: 5n,
      perWithdrawalCap: 2n,
      rollingWithdrawalBlocks: 3n,
      rollingWithdrawalCap: 4n,
    });
    expect((r.json.accountCaps as Record<string, unknown>).alice).toMatchObject({
      perWithdrawalCap: 1n,
    });
  });

  test('after a SIGKILL during a stream of operator events, a restart has every acknowledged event', async () => {
    const dir = tempDir();
    const env = { PEG_LIMITS_ADMIN_TOKEN: TOKEN };
    const p = await serve(['--port', '0', '--data', dir, '--quiet'], env);
    expect(
      (await send(p.url, '/admin/events', events({ type: 'blockConnected', height: 100 }))).status,
    ).toBe(200);
    const acknowledged: string[] = [];
    let n = 0;
    let stop = false;
    const writer = async () => {
      while (!stop) {
        const id = `w${n++}`;
        try {
          const r = await send(
            p.url,
            '/admin/events',
            events({ type: 'withdrawalRequested', id, account: 'a', amount: 1, height: 100 }),
          );
          if (r.status === 200) acknowledged.push(id);
        } catch {
          return; // the server is gone
        }
      }
    };
    const writers = Promise.all([writer(), writer(), writer(), writer()]);
    while (acknowledged.length < 200) await new Promise((r) => setTimeout(r, 5));
    killGroup(p, 'SIGKILL');
    stop = true;
    await writers;
    expect(await p.exited).toBe('SIGKILL');
    // A crash may leave half a line: simulate the worst case on top of what the kill left.
    appendFileSync(join(dir, 'journal.jsonl'), '[{"type":"withdrawalRequested","id":"torn');

    const q = await serve(['--port', '0', '--data', dir, '--quiet'], env);
    await waitFor(() => /dropped a last line cut short/.test(q.stderr));
    const reject = acknowledged.map((id) => ({ type: 'withdrawalRejected', id }));
    const r = await send(q.url, '/admin/events', events(reject));
    expect(r.status, r.body).toBe(200);
    expect(acknowledged.length).toBeGreaterThanOrEqual(200);
  });
});

describe('the request lines', () => {
  const open = () => openDataLog({ dir: tempDir(), initial: createLimitsState() });

  test('go to logRequestText, one line an answered request', async () => {
    const lines: string[] = [];
    const s = await startServer({
      log: await open(),
      port: 0,
      logRequestText: (l) => lines.push(l),
    });
    running.push(s);
    await send(s.url, '/limits');
    expect(lines).toEqual([expect.stringMatching(/^GET \/limits 200 \d+\.\dms$/)]);
  });

  test('go to the deprecated logLine when logRequestText is not given', async () => {
    const lines: string[] = [];
    const s = await startServer({ log: await open(), port: 0, logLine: (l) => lines.push(l) });
    running.push(s);
    await send(s.url, '/limits');
    expect(lines).toEqual([expect.stringMatching(/^GET \/limits 200 /)]);
  });

  test('go to logRequestText alone when both are given', async () => {
    const text: string[] = [];
    const old: string[] = [];
    const s = await startServer({
      log: await open(),
      port: 0,
      logRequestText: (l) => text.push(l),
      logLine: (l) => old.push(l),
    });
    running.push(s);
    await send(s.url, '/limits');
    expect([text.length, old.length]).toEqual([1, 0]);
  });
});
