/**
 * Reads a data folder's snapshot file (`snapshot.json`, version 2: a header line, the head,
 * then lines of entries and of withdrawals, then their counts) on its own, apart from the
 * code that writes and reads it, so that tests check the format rather than trust it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeJson } from '../../src/index.js';

export interface DataSnapshotFile {
  readonly seq: bigint;
  readonly head: Record<string, unknown> & { tip: bigint | null };
  readonly accountCaps: Record<string, unknown>;
  readonly withdrawals: Array<{ id: string; account: string; amount: bigint; height: bigint }>;
  readonly lines: number;
}

export function readDataSnapshot(dir: string): DataSnapshotFile {
  const lines = readFileSync(join(dir, 'snapshot.json'), 'utf8').split('\n');
  if (lines.pop() !== '') throw new Error('the snapshot does not end with a newline');
  const header = decodeJson(lines[0]!) as { format: string; version: bigint; seq: bigint };
  if (header.format !== 'peg-limits/data-snapshot' || header.version !== 2n)
    throw new Error(`not a version 2 data snapshot: ${lines[0]}`);
  const { head } = decodeJson(lines[1]!) as { head: DataSnapshotFile['head'] };
  const accountCaps: Record<string, unknown> = {};
  const withdrawals: DataSnapshotFile['withdrawals'] = [];
  const end = decodeJson(lines.at(-1)!) as { end: { accountCaps: bigint; withdrawals: bigint } };
  for (const line of lines.slice(2, -1)) {
    const part = decodeJson(line) as {
      accountCaps?: Record<string, unknown>;
      withdrawals?: DataSnapshotFile['withdrawals'];
    };
    Object.assign(accountCaps, part.accountCaps ?? {});
    withdrawals.push(...(part.withdrawals ?? []));
  }
  if (
    end.end.withdrawals !== BigInt(withdrawals.length) ||
    end.end.accountCaps !== BigInt(Object.keys(accountCaps).length)
  )
    throw new Error('the counts line does not match the file');
  return { seq: header.seq, head, accountCaps, withdrawals, lines: lines.length };
}
