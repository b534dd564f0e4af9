/**
 * `peg-limits audit verify --data DIR | --store URL`: recomputes the audit trail's chain,
 * from its first record to its last. Exit 0 with the count of records, 1 naming the first
 * position where it breaks (a record changed, missing or out of order), or 2 when there is
 * no trail to check (a folder that does not exist or holds none: a mistyped path must not
 * pass an integrity check). Node-only.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { dataTrail, JOURNAL_FILE } from '../data-folder/index.js';
import { redactStore } from '../ops/index.js';
import { storeTrail } from '../postgres/index.js';
import { verifyTrail } from '../record/index.js';
import { fail, USAGE } from './options.js';

/** Runs the check; resolves with the exit code and what to print. */
async function auditVerify(
  from: { readonly data: string } | { readonly store: string },
): Promise<{ readonly code: 0 | 1 | 2; readonly out: string }> {
  const where = 'data' in from ? from.data : redactStore(from.store);
  if ('data' in from) {
    if (!existsSync(from.data) || !statSync(from.data).isDirectory())
      return {
        code: 2,
        out: `${where} does not exist (or is not a folder): no audit trail to verify`,
      };
    if (!existsSync(join(from.data, JOURNAL_FILE)) && !existsSync(join(from.data, 'audit')))
      return {
        code: 2,
        out: `${where} holds no audit trail (no ${JOURNAL_FILE}, no audit/): is it the data folder of peg-limits serve?`,
      };
  }
  const lines =
    'data' in from ? dataTrail(from.data, join(from.data, JOURNAL_FILE)) : storeTrail(from.store);
  const v = await verifyTrail(lines);
  if (!v.ok)
    return {
      code: 1,
      out: `the audit trail of ${where} breaks at position ${v.position}: ${v.why} (${v.count} records before it link up)`,
    };
  if (v.count === 0) return { code: 2, out: `${where} holds no audit trail: no records to verify` };
  const span = `${v.count} records, positions ${v.first}…${v.last}`;
  const repairs = v.repairs
    .map((r) => `\na new chain starts at position ${r.position} (--audit-repair): ${r.reason}`)
    .join('');
  return { code: 0, out: `the audit trail of ${where} links up: ${span}${repairs}` };
}

/** `peg-limits audit <args>`: parses them, runs the check, prints, sets the exit code. */
export async function auditCommand(args: ReadonlyArray<string>): Promise<void> {
  let values: Record<string, string | boolean | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: [...args],
      options: { data: { type: 'string' }, store: { type: 'string' } },
      allowPositionals: true,
      strict: true,
    }));
  } catch (e) {
    fail(`${(e as Error).message}\n${USAGE}`);
  }
  const data = values.data as string | undefined;
  const store = (values.store as string | undefined) ?? (process.env.PEG_LIMITS_STORE || undefined);
  if (positionals.join(' ') !== 'verify' || (data === undefined) === (store === undefined))
    fail('usage: peg-limits audit verify --data DIR | --store postgres://…');
  try {
    const r = await auditVerify(data !== undefined ? { data } : { store: store! });
    (r.code === 0 ? process.stdout : process.stderr).write(
      r.code === 2 ? `peg-limits: ${r.out}\n` : `${r.out}\n`,
    );
    process.exitCode = r.code;
  } catch (e) {
    fail(`cannot read the audit trail: ${(e as Error).message}`);
  }
}
