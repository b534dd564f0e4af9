/**
 * What became of pending changes, said in the server's log: each change proposed, applied,
 * dropped (and why) or cancelled, with the log position of the batch it happened in. A
 * change settles inside another batch (a block, an approval, a throttle start), so the log
 * line is how an operator learns that a change was dropped. Node-only.
 */
import { type EventLog, encodeJson, pendingChanges } from 'peg-limits';
import { located } from '../../internal.js';
import { type DurableBatch, observeAppends } from '../ops/index.js';
import { settledIn } from './audit.js';

/** The lines one durable batch gives (none when no pending change was touched). */
function changeLines(batch: DurableBatch): string[] {
  const before = pendingChanges(batch.base);
  const after = pendingChanges(batch.next);
  // The list is shared as long as nothing happens to it: the common case costs one compare.
  if (before === after) return [];
  const lines: string[] = [];
  const known = new Set(before.map((c) => c.id));
  for (const c of after) {
    if (known.has(c.id)) continue;
    const when = [
      c.effectiveAt !== null ? `at height ${c.effectiveAt}` : undefined,
      c.delayBlocks !== null && c.effectiveAt === null
        ? `${c.delayBlocks} blocks after the first block`
        : undefined,
      c.quorum !== 0 ? `with ${c.quorum} approvals` : undefined,
    ].filter((w) => w !== undefined);
    lines.push(
      `change ${c.id} proposed by ${c.proposedBy} at position ${batch.position}: applies ${when.join(' or ')}: ${encodeJson(c.events)}`,
    );
  }
  for (const s of settledIn(batch.base, batch.next, batch.events)) {
    const what = `change ${s.change.id} (proposed by ${s.change.proposedBy})`;
    if (s.outcome === 'dropped')
      lines.push(
        `warning: ${what} dropped at position ${batch.position}: it no longer applies: ${s.error === undefined ? '' : located(s.error)}`,
      );
    else lines.push(`${what} ${s.outcome} at position ${batch.position}`);
  }
  return lines;
}

/** `log`, saying in `logLine` what became of pending changes in each of its durable batches. */
export function recordChanges(log: EventLog, logLine: (line: string) => void): EventLog {
  return observeAppends(log, (batch) => {
    for (const line of changeLines(batch)) logLine(line);
  });
}
