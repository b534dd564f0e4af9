/**
 * What the Stacks observer remembers of the blocks (their hashes, heights, the events they
 * gave, the supply as of each, and the blocks held back), and where it keeps it: the data
 * folder's `stacks-observer.json`, written atomically, or PostgreSQL's
 * `peg_limits_stacks_memory`, shared by the replicas. Node-only.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeJson, encodeJson, eventsFromJson, PegLimitsError } from 'peg-limits';
import type pg from 'pg';
import {
  type BlockMemory,
  EMPTY_MEMORY,
  type HeldBlock,
  type RememberedBlock,
} from '../../internal.js';
import { writeAtomically } from '../data-folder/index.js';
import { connectClient } from '../postgres/index.js';

/** Where the observer's memory of blocks is kept. */
export interface BlockMemoryStore {
  load(): Promise<BlockMemory>;
  save(memory: BlockMemory): Promise<void>;
  close?(): Promise<void>;
}

// The memory as JSON text: events with exact amounts.
// A held block's payload is kept as its JSON text: read back as it came (heights numbers).
function memoryText(memory: BlockMemory): string {
  const held = (memory.held ?? []).map((h) => ({ ...h, payload: JSON.stringify(h.payload) }));
  return encodeJson({
    version: 1,
    head: memory.head,
    blocks: memory.blocks,
    held,
    keys: memory.keys ?? [],
  });
}

function memoryFrom(text: string): BlockMemory {
  const value = decodeJson(text) as {
    head?: unknown;
    blocks?: unknown;
    held?: unknown;
    keys?: unknown;
  };
  if (typeof value.head !== 'string' || !Array.isArray(value.blocks))
    throw new PegLimitsError('invalid_block_memory', 'not a memory of blocks');
  const blocks: RememberedBlock[] = value.blocks.map((b: Record<string, unknown>) => {
    const events = eventsFromJson(b.events);
    if (!events.ok) throw new PegLimitsError('invalid_block_memory', events.error.message);
    return {
      hash: String(b.hash),
      parent: String(b.parent),
      height: Number(b.height),
      burnHeight: Number(b.burnHeight),
      burnHash: String(b.burnHash),
      events: events.events,
      ...(typeof b.supply === 'bigint' ? { supply: b.supply } : {}),
    };
  });
  const held: HeldBlock[] = (Array.isArray(value.held) ? value.held : []).map(
    (h: Record<string, unknown>) => ({
      hash: String(h.hash),
      height: Number(h.height),
      burnHeight: Number(h.burnHeight),
      reason: String(h.reason),
      at: String(h.at),
      payload: JSON.parse(String(h.payload)) as unknown,
    }),
  );
  const keys = Array.isArray(value.keys) ? value.keys.map(String) : [];
  return {
    head: value.head,
    blocks,
    ...(held.length === 0 ? {} : { held }),
    ...(keys.length === 0 ? {} : { keys }),
  };
}

/**
 * The memory kept in the data folder, `stacks-observer.json`, written atomically. Only this
 * process writes it, so it is read once and then kept as last written.
 */
export function dataBlockMemory(dir: string): BlockMemoryStore {
  const file = 'stacks-observer.json';
  let held: BlockMemory | undefined;
  return {
    async load() {
      if (held !== undefined) return held;
      try {
        held = memoryFrom(await readFile(join(dir, file), 'utf8'));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
          throw new PegLimitsError(
            'invalid_block_memory',
            `${join(dir, file)}: ${(e as Error).message}`,
          );
        held = EMPTY_MEMORY;
      }
      return held;
    },
    async save(memory) {
      const text = memoryText(memory);
      await writeAtomically(dir, file, (put) => put(text));
      held = memory;
    },
  };
}

/**
 * The memory kept on PostgreSQL, in `peg_limits_stacks_memory` (made when first used), so
 * that any replica the node posts to knows the blocks before; it is read again for each
 * block.
 */
export function pgBlockMemory(url: string): BlockMemoryStore {
  let client: pg.Client | undefined;
  const query = async (text: string, values: unknown[]) => {
    if (client === undefined) {
      const c = await connectClient(url);
      c.on('error', () => {
        if (client === c) client = undefined;
      });
      await c.query(
        'CREATE TABLE IF NOT EXISTS peg_limits_stacks_memory (key text PRIMARY KEY, memory text NOT NULL)',
      );
      client = c;
    }
    const c = client;
    try {
      return await c.query(text, values);
    } catch (e) {
      if (client === c) client = undefined;
      await c.end().catch(() => undefined);
      throw e;
    }
  };
  return {
    async load() {
      const { rows } = await query('SELECT memory FROM peg_limits_stacks_memory WHERE key = $1', [
        'observer',
      ]);
      return rows[0] === undefined ? EMPTY_MEMORY : memoryFrom(String(rows[0].memory));
    },
    async save(memory) {
      await query(
        'INSERT INTO peg_limits_stacks_memory (key, memory) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET memory = EXCLUDED.memory',
        ['observer', memoryText(memory)],
      );
    },
    async close() {
      const c = client;
      client = undefined;
      await c?.end().catch(() => undefined);
    },
  };
}
