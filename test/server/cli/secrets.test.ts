// Secrets are never printed: a password in --store, credentials or a query string in
// --alert-url, operator tokens and throttle secrets appear in no log line or error message.
import { writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { hashThrottleSecret } from '../../../src/index.js';
import {
  CLI,
  killGroup,
  type Proc,
  runToEnd,
  startServe,
  tempDir,
  waitFor,
} from '../../support/proc.js';

const procs: Proc[] = [];
afterEach(() => {
  for (const p of procs.splice(0)) killGroup(p);
});

/** A secret no message could carry by chance. */
const secret = (what: string) => `${what}-${Math.random().toString(36).slice(2)}x9Q7`;

function expectNowhere(out: { stdout: string; stderr: string }, ...secrets: string[]): void {
  for (const s of secrets) {
    expect(out.stdout, `stdout carries ${s}`).not.toContain(s);
    expect(out.stderr, `stderr carries ${s}`).not.toContain(s);
  }
}

/** A port nothing listens on (taken, then closed). */
function deadPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

describe('bad options that carry a secret: the message says what is wrong, never the secret', () => {
  test('--store: not a PostgreSQL URL, a malformed one, a password parameter, a database out of reach', async () => {
    const pass = secret('pass');
    const param = secret('param');
    const cases: Array<[string[], RegExp]> = [
      [
        ['--store', `mysql://limits:${pass}@db/limits`],
        /--store takes a PostgreSQL connection string/,
      ],
      [
        [
          '--store',
          `postgres://limits:${pass}@127.0.0.1:${await deadPort()}/limits`,
          '--connect-timeout',
          '1',
        ],
        /cannot reach the database at postgres:\/\/limits:\*\*\*@127\.0\.0\.1/,
      ],
      [
        [
          '--store',
          `postgres://limits:${pass}@127.0.0.1:notaport/limits`,
          '--connect-timeout',
          '1',
        ],
        /cannot (reach|start)/,
      ],
      [
        [
          '--store',
          `postgres://limits@127.0.0.1:${await deadPort()}/limits?password=${param}`,
          '--connect-timeout',
          '1',
        ],
        /cannot reach the database/,
      ],
    ];
    for (const [args, said] of cases) {
      const r = await runToEnd('node', [CLI, 'serve', '--port', '0', ...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(said);
      expectNowhere(r, pass, param);
    }
  }, 30_000);

  test('--alert-url: not http(s), with credentials and a token in its query', async () => {
    const user = secret('user');
    const token = secret('token');
    const r = await runToEnd('node', [
      CLI,
      'serve',
      '--port',
      '0',
      '--alert-url',
      `ftp://${user}:${token}@hooks.example/p?token=${token}`,
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /--alert-url takes an http\(s\) URL, got ftp:\/\/\*\*\*:\*\*\*@hooks\.example\/p\?\*\*\*/,
    );
    expectNowhere(r, user, token);
  });

  test('an admin token too short is refused by its length, not shown', async () => {
    const token = secret('tok').slice(0, 20);
    const r = await runToEnd('node', [CLI, 'serve', '--port', '0'], {
      PEG_LIMITS_ADMIN_TOKEN: token,
    });
    expect(r.code).toBe(2);
    expectNowhere(r, token);
  });
});

describe('a running server', () => {
  test('retrying an alert to a URL with a token, and every request line, say neither the token nor a secret', async () => {
    const dir = tempDir();
    const token = secret('hook');
    const admin = secret('operator-token-of-length');
    const throttle = secret('throttle-secret-of-length');
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        throttleKeys: [{ name: 'ops-1', secretHash: hashThrottleSecret(throttle) }],
      }),
    );
    const p = await startServe(
      [
        '--config',
        config,
        '--data',
        join(dir, 'data'),
        '--alert-url',
        `http://127.0.0.1:${await deadPort()}/hook?token=${token}`,
      ],
      { PEG_LIMITS_ADMIN_TOKEN: admin },
    );
    procs.push(p);
    const brake = await fetch(`${p.url}/start_throttle`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'ops-1', secret: throttle }),
    });
    expect(brake.status).toBe(200);
    const wrong = await fetch(`${p.url}/admin/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}x` },
      body: '[]',
    });
    expect(wrong.status).toBe(401);
    await waitFor(
      () => /alert \S+ to http:\/\/127\.0\.0\.1:\d+\/hook\?\*\*\* failed/.test(p.stderr),
      10_000,
    );
    expectNowhere(p, token, admin, throttle);
  }, 30_000);

  test("an alert URL's user and password are sent as Basic credentials and shown in no output", async () => {
    const password = secret('hook-password');
    const token = secret('hook-token');
    const admin = secret('operator-token-of-length');
    const got: Array<{ authorization: string | undefined; url: string | undefined }> = [];
    const receiver = createHttpServer((req, res) => {
      got.push({ authorization: req.headers.authorization, url: req.url });
      req.resume();
      req.on('end', () => res.end());
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
    const port = (receiver.address() as { port: number }).port;
    try {
      const dir = tempDir();
      const p = await startServe(
        [
          '--data',
          dir,
          '--alert-url',
          `http://hooks:${password}@127.0.0.1:${port}/hook?token=${token}`,
          '--alert-url',
          `http://hooks:${password}@127.0.0.1:${await deadPort()}/hook?token=${token}`,
        ],
        { PEG_LIMITS_ADMIN_TOKEN: admin },
      );
      procs.push(p);
      const r = await fetch(`${p.url}/admin/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` },
        body: JSON.stringify({ type: 'throttleStarted', initiator: 'ops' }),
      });
      expect(r.status).toBe(200);
      await waitFor(() => got.length > 0, 10_000);
      expect(got[0]?.authorization).toBe(
        `Basic ${Buffer.from(`hooks:${password}`).toString('base64')}`,
      );
      expect(got[0]?.url).toBe(`/hook?token=${token}`);
      // The dead one is retried with a warning that names neither.
      await waitFor(() => /alert \S+ to .* failed \(unreachable/.test(p.stderr), 10_000);
      expectNowhere(p, password, token, admin);
    } finally {
      receiver.close();
    }
  }, 30_000);
});
