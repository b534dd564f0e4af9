/**
 * Compaction keeps its interval across crashes: a server that opens a journal counts the
 * events it replayed toward the next snapshot, so a server killed again and again (SIGKILL:
 * no snapshot at the stop) still compacts every `--snapshot-every` events, the journal never
 * holds much more than that, and a restart never has more to replay.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { CLI, killGroup, type Proc, spawnServer, tempDir } from '../../support/proc.js';
import { TOKEN } from '../../support/tokens.js';

const procs: Proc[] = [];
afterAll(() => {
  for (const p of procs.splice(0)) killGroup(p, 'SIGKILL');
});

const EVERY = 400;
// Each round writes 300 events, fewer than the interval: without counting what a restart
// replays, no round ever reaches it, and the journal grows for ever.
const PER_ROUND = 300;

function journalEvents(dir: string): number {
  const text = readFileSync(join(dir, 'journal.jsonl'), 'utf8');
  return [...text.matchAll(/"type":"/g)].length;
}

test('killed every 300 events with a snapshot every 400, the journal stays near the interval and restarts stay flat', async () => {
  const dir = tempDir();
  let height = 1000;
  const journals: number[] = [];
  const replays: number[] = [];
  for (let round = 0; round < 6; round++) {
    const p = await spawnServer(
      'node',
      [CLI, 'serve', '--port', '0', '--data', dir, '--snapshot-every', String(EVERY), '--quiet'],
      { PEG_LIMITS_ADMIN_TOKEN: TOKEN },
    );
    procs.push(p);
    const replayed = /(\d+) replayed from the journal/.exec(p.stdout + p.stderr);
    replays.push(Number(replayed?.[1] ?? 0));
    for (let i = 0; i < PER_ROUND / 10; i++) {
      const events = Array.from({ length: 10 }, () => ({
        type: 'blockConnected',
        height: height++,
      }));
      const r = await fetch(`${p.url}/admin/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify(events),
      });
      expect(r.status).toBe(200);
    }
    // A compaction started by the last writes finishes its slices first.
    await new Promise((r) => setTimeout(r, 300));
    journals.push(journalEvents(dir));
    killGroup(p, 'SIGKILL');
    await p.exited;
  }
  // The journal holds at most the interval and the batch that crossed it (and what came while
  // the snapshot was being written).
  expect(Math.max(...journals), `journal events after each round: ${journals}`).toBeLessThanOrEqual(
    EVERY + PER_ROUND,
  );
  expect(Math.max(...replays), `batches replayed at each start: ${replays}`).toBeLessThanOrEqual(
    (EVERY + PER_ROUND) / 10,
  );
});
