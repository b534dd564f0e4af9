// The audit trail of the data folder, through `peg-limits serve` and `peg-limits audit
// verify` as real processes: every accepted batch has its record, kept across compactions
// and restarts, served in order, and a changed, missing or reordered record is named.
import { cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import {
  decodeJson,
  generateOperatorToken,
  hashOperatorToken,
  hashThrottleSecret,
} from '../../../src/index.js';
import { CLI, killGroup, type Proc, runToEnd, startServe, tempDir } from '../../support/proc.js';

const ADMIN = generateOperatorToken();
const GOV = generateOperatorToken();
const SECRET = 'a-throttle-secret-of-enough-length';

const procs: Proc[] = [];
afterEach(() => {
  for (const p of procs.splice(0)) killGroup(p);
});

function configIn(dir: string): string {
  const file = join(dir, 'config.json');
  writeFileSync(
    file,
    JSON.stringify({
      throttleKeys: [{ name: 'ops-1', secretHash: hashThrottleSecret(SECRET) }],
      operators: [{ name: 'gov', tokenHash: hashOperatorToken(GOV), scopes: ['chain', 'limits'] }],
    }),
  );
  return file;
}

async function serve(dir: string, extra: string[] = []): Promise<Proc> {
  const p = await startServe(
    ['--quiet', '--config', configIn(dir), '--data', join(dir, 'data'), ...extra],
    { PEG_LIMITS_ADMIN_TOKEN: ADMIN },
  );
  procs.push(p);
  return p;
}

const post = (url: string, token: string, events: unknown, id?: string) =>
  fetch(`${url}/admin/events`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${token}`,
      ...(id === undefined ? {} : { 'peg-limits-request-id': id }),
    },
    body: JSON.stringify(events),
  });

type Row = Record<string, unknown> & { position: bigint; hash: string };
async function trail(
  url: string,
  query = '',
): Promise<{ status: number; rows: Row[]; body: string }> {
  const r = await fetch(`${url}/admin/audit${query}`, {
    headers: { authorization: `Bearer ${GOV}` },
  });
  const body = await r.text();
  return { status: r.status, body, rows: r.status === 200 ? (decodeJson(body) as Row[]) : [] };
}

const verify = (dir: string) =>
  runToEnd('node', [CLI, 'audit', 'verify', '--data', join(dir, 'data')]);

describe('the audit trail of a data folder', () => {
  test('every batch has its chained record (who, which request, from where, the events), served in order', async () => {
    const dir = tempDir();
    const p = await serve(dir);
    const first = await post(p.url, GOV, [{ type: 'blockConnected', height: 100 }], 'deploy-42');
    expect(first.status).toBe(200);
    expect(first.headers.get('peg-limits-request-id')).toBe('deploy-42');
    const second = await post(p.url, ADMIN, [{ type: 'limitsSet', limits: { pegCap: 5 } }]);
    const made = second.headers.get('peg-limits-request-id');
    expect(made).toMatch(/^[0-9a-f-]{36}$/);
    const brake = await fetch(`${p.url}/start_throttle`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'ops-1', secret: SECRET }),
    });
    expect(brake.status).toBe(200);
    // A refusal makes no record.
    expect((await post(p.url, GOV, [{ type: 'blockConnected', height: 99 }])).status).toBe(409);
    expect((await post(p.url, GOV, [{ type: 'x' }], 'bad id with spaces')).status).toBe(400);

    const { status, rows } = await trail(p.url);
    expect(status).toBe(200);
    expect(rows.map((r) => [r.position, r.actor, r.requestId, r.remote])).toEqual([
      [1n, { kind: 'operator', name: 'gov' }, 'deploy-42', '127.0.0.1'],
      [2n, { kind: 'operator', name: 'admin' }, made, '127.0.0.1'],
      [3n, { kind: 'throttleKey', name: 'ops-1' }, expect.any(String), '127.0.0.1'],
    ]);
    expect(rows[0]!.events).toEqual([{ type: 'blockConnected', height: 100n }]);
    expect(new Date(String(rows[0]!.at)).getTime()).toBeGreaterThan(Date.now() - 60_000);
    for (const r of rows) expect(r.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(new Set(rows.map((r) => r.hash)).size).toBe(3);
    // After and limit.
    expect((await trail(p.url, '?after=1&limit=1')).rows.map((r) => r.position)).toEqual([2n]);
    expect((await trail(p.url, '?after=3')).rows).toEqual([]);
    expect((await trail(p.url, '?limit=0')).rows).toEqual([]);
    for (const bad of ['?after=-1', '?limit=10001', '?after=x', '?limit=1.5']) {
      const r = await trail(p.url, bad);
      expect(r.status, bad).toBe(400);
      expect(r.body).toContain('bad_request');
    }
    expect((await fetch(`${p.url}/admin/audit`)).status).toBe(401);
  });

  test('records from before compactions and a restart are still served, and verify counts them all', async () => {
    const dir = tempDir();
    let p = await serve(dir, ['--snapshot-every', '3']);
    for (let h = 1; h <= 10; h++)
      expect((await post(p.url, GOV, [{ type: 'blockConnected', height: h }])).status).toBe(200);
    p.child.kill('SIGTERM');
    await p.exited;
    // The journal let go of them: they are in the archive.
    expect(readdirSync(join(dir, 'data', 'audit')).length).toBeGreaterThan(0);
    expect(readFileSync(join(dir, 'data', 'journal.jsonl'), 'utf8')).toBe(
      '{"format":"peg-limits/journal","after":10}\n',
    );
    p = await serve(dir, ['--snapshot-every', '3']);
    for (let h = 11; h <= 12; h++)
      expect((await post(p.url, GOV, [{ type: 'blockConnected', height: h }])).status).toBe(200);
    const { rows } = await trail(p.url);
    expect(rows.map((r) => Number(r.position))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(rows.map((r) => (r.events as Array<{ height: bigint }>)[0]!.height)).toEqual(
      Array.from({ length: 12 }, (_, i) => BigInt(i + 1)),
    );
    expect((await trail(p.url, '?after=8&limit=3')).rows.map((r) => Number(r.position))).toEqual([
      9, 10, 11,
    ]);
    const v = await verify(dir);
    expect(v.code).toBe(0);
    expect(v.stdout).toContain('12 records, positions 1…12');
  });
});

describe('verify of nothing', () => {
  test('a folder that does not exist, or holds no trail, exits 2 naming it: a mistyped path never passes', async () => {
    const missing = join(tempDir(), 'nonexistent');
    const r = await runToEnd('node', [CLI, 'audit', 'verify', '--data', missing]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${missing} does not exist`);
    const empty = tempDir();
    const e = await runToEnd('node', [CLI, 'audit', 'verify', '--data', empty]);
    expect(e.code).toBe(2);
    expect(e.stderr).toContain(`${empty} holds no audit trail`);
  });
});

describe('a record changed, missing or out of order', () => {
  // A folder whose trail is in the archive (positions 1…6) and the journal (7…8).
  async function folder(): Promise<string> {
    const dir = tempDir();
    let p = await serve(dir);
    for (let h = 1; h <= 6; h++) await post(p.url, GOV, [{ type: 'blockConnected', height: h }]);
    p.child.kill('SIGTERM');
    await p.exited;
    p = await serve(dir);
    for (let h = 7; h <= 8; h++) await post(p.url, GOV, [{ type: 'blockConnected', height: h }]);
    killGroup(p, 'SIGKILL');
    await p.exited;
    return dir;
  }
  const archived = (dir: string) =>
    join(dir, 'data', 'audit', readdirSync(join(dir, 'data', 'audit'))[0]!);
  const edit = (file: string, change: (lines: string[]) => string[]) =>
    writeFileSync(file, `${change(readFileSync(file, 'utf8').trimEnd().split('\n')).join('\n')}\n`);

  test('verify names the first position where the chain breaks: a byte, a line gone, two swapped', async () => {
    const base = await folder();
    expect((await verify(base)).code).toBe(0);
    const cases: Array<[string, (dir: string) => void, RegExp]> = [
      [
        'one byte of record 3',
        (dir) =>
          edit(archived(dir), (l) =>
            l.map((x, i) => (i === 2 ? x.replace('"height":3', '"height":9') : x)),
          ),
        /breaks at position 3/,
      ],
      [
        'record 4 deleted',
        (dir) => edit(archived(dir), (l) => l.filter((_, i) => i !== 3)),
        /breaks at position 4/,
      ],
      [
        'records 2 and 3 swapped',
        (dir) => edit(archived(dir), (l) => [l[0]!, l[2]!, l[1]!, ...l.slice(3)]),
        /breaks at position 2/,
      ],
      [
        'one byte of record 8, in the journal',
        (dir) =>
          edit(join(dir, 'data', 'journal.jsonl'), (l) =>
            l.map((x) => x.replace('"height":8', '"height":80')),
          ),
        /breaks at position 8/,
      ],
    ];
    for (const [what, breakIt, said] of cases) {
      const dir = tempDir();
      cpSync(base, dir, { recursive: true });
      breakIt(dir);
      const v = await verify(dir);
      expect(v.code, what).toBe(1);
      expect(v.stderr, what).toMatch(said);
    }
  }, 60_000);

  test('a journal whose records do not link up stops the start (exit 2, naming the position) unless --audit-repair, which starts a new chain that records the break', async () => {
    const dir = await folder();
    // Record 7 (the journal's first line after its header) says another client address.
    edit(join(dir, 'data', 'journal.jsonl'), (l) =>
      l.map((x, i) => (i === 1 ? x.replace('"remote":"127.0.0.1"', '"remote":"10.6.6.6"') : x)),
    );
    const refused = await runToEnd(
      'node',
      [CLI, 'serve', '--port', '0', '--config', configIn(dir), '--data', join(dir, 'data')],
      { PEG_LIMITS_ADMIN_TOKEN: ADMIN },
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/the audit trail breaks at position 7/);
    const p = await serve(dir, ['--audit-repair']);
    const { rows } = await trail(p.url);
    const last = rows[rows.length - 1]!;
    expect(last).toMatchObject({ position: 9n, actor: { kind: 'system' }, events: [] });
    expect(String((last.repair as { reason: string }).reason)).toContain('journal.jsonl');
    expect((await post(p.url, GOV, [{ type: 'blockConnected', height: 100 }])).status).toBe(200);
    killGroup(p, 'SIGKILL');
    await p.exited;
    // Nothing was rewritten: verify still names the break, and says where the new chain starts.
    const v = await verify(dir);
    expect(v.code).toBe(1);
    expect(v.stderr).toMatch(/breaks at position 7/);
    // The break is on the record: the next start needs no --audit-repair.
    const again = await serve(dir);
    expect((await trail(again.url, '?after=9')).rows.map((r) => r.position)).toEqual([10n]);
  }, 60_000);
});

describe('killed in the middle of writes and compactions', () => {
  test('SIGKILL rounds: no batch without its record, no record without its batch, and the chain links up', async () => {
    const dir = tempDir();
    let height = 1;
    let acknowledged = 0;
    for (let round = 0; round < 6; round++) {
      const p = await serve(dir, ['--snapshot-every', '7']);
      let stop = false;
      const writer = async () => {
        while (!stop) {
          const h = height++;
          try {
            const r = await post(p.url, GOV, [{ type: 'blockConnected', height: h * 10 + round }]);
            if (r.status === 200) acknowledged++;
          } catch {
            return;
          }
        }
      };
      const writers = Promise.all([writer(), writer(), writer()]);
      await new Promise((r) => setTimeout(r, 150 + round * 40));
      killGroup(p, 'SIGKILL');
      stop = true;
      await writers;
      await p.exited;
    }
    const p = await serve(dir);
    const position = Number((await fetch(`${p.url}/limits`)).headers.get('peg-limits-position'));
    expect(position).toBeGreaterThanOrEqual(acknowledged);
    const rows: Row[] = [];
    for (let after = 0; ; ) {
      const page = (await trail(p.url, `?after=${after}&limit=10000`)).rows;
      if (page.length === 0) break;
      rows.push(...page);
      after = Number(page[page.length - 1]!.position);
    }
    expect(rows.map((r) => Number(r.position))).toEqual(
      Array.from({ length: position }, (_, i) => i + 1),
    );
    killGroup(p, 'SIGKILL');
    await p.exited;
    const v = await verify(dir);
    expect(v.code, v.stderr).toBe(0);
    expect(v.stdout).toContain(`${position} records, positions 1…${position}`);
  }, 90_000);
});
