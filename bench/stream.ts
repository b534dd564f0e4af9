/**
 * The benchmark workload and its two baselines: a plain mutable loop (the floor) and a
 * recompute-by-scanning service (what a database-backed limits API does per request).
 */
import type { LimitsEvent } from '../src/index.js';

export const WINDOW = 144;
export const HISTORY = 2016;
export const CAP = 50_000_000_000n;
export const ACCOUNTS = 64;

/** A deterministic pseudo-random amount in satoshis (10k … 1M). */
function amountOf(i: number): bigint {
  return BigInt(10_000 + ((i * 2654435761) % 990_000));
}

/**
 * `blocks` blocks with `perBlock` withdrawals each, 1 in 100 of them rejected in the next
 * block, accounts spread over 64 names.
 */
export function stream(blocks: number, perBlock = 16, startHeight = 800_000): LimitsEvent[] {
  const events: LimitsEvent[] = [];
  let pendingRejects: string[] = [];
  let n = 0;
  for (let b = 0; b < blocks; b++) {
    const height = startHeight + b;
    events.push({ type: 'blockConnected', height });
    for (const id of pendingRejects) events.push({ type: 'withdrawalRejected', id });
    pendingRejects = [];
    for (let i = 0; i < perBlock; i++, n++) {
      const id = `w${n}`;
      events.push({
        type: 'withdrawalRequested',
        id,
        account: `acct${n % ACCOUNTS}`,
        amount: amountOf(n),
        height,
      });
      if (n % 100 === 99) pendingRejects.push(id);
    }
  }
  return events;
}

interface FloorWithdrawal {
  readonly account: string;
  readonly amount: bigint;
  readonly height: number;
  rejected: boolean;
}

/**
 * The floor: the same bookkeeping with plain mutable structures (a ring of per-block
 * sums, a running window sum, a Map of withdrawals, per-account rings), no persistence.
 */
export class MutableFloor {
  private readonly ring: bigint[];
  private readonly ids: string[][];
  private readonly byId = new Map<string, FloorWithdrawal>();
  private readonly accounts = new Map<string, bigint[]>();
  private windowSum = 0n;
  private tip = -1;

  constructor(
    private readonly history: number,
    private readonly window: number,
    private readonly cap: bigint,
  ) {
    this.ring = new Array<bigint>(history).fill(0n);
    this.ids = Array.from({ length: history }, () => []);
  }

  apply(e: LimitsEvent): void {
    if (e.type === 'blockConnected') this.block(e.height);
    else if (e.type === 'withdrawalRequested') this.withdraw(e.id, e.account, e.amount, e.height);
    else if (e.type === 'withdrawalRejected') this.reject(e.id);
  }

  private slot(h: number): number {
    let s = h % this.history;
    if (s < 0) s += this.history;
    return s;
  }

  private block(height: number): void {
    for (let h = this.tip + 1; h <= height && this.tip >= 0; h++) {
      const leaving = h - this.window;
      this.windowSum -= this.ring[this.slot(leaving)]!;
      const slot = this.slot(h);
      for (const id of this.ids[slot]!) {
        const w = this.byId.get(id)!;
        this.byId.delete(id);
        if (!w.rejected) this.accounts.get(w.account)![slot]! -= w.amount;
      }
      this.ids[slot] = [];
      this.ring[slot] = 0n;
    }
    this.tip = height;
  }

  private withdraw(id: string, account: string, amount: bigint, height: number): void {
    if (this.byId.has(id)) return;
    this.byId.set(id, { account, amount, height, rejected: false });
    const slot = this.slot(height);
    this.ring[slot]! += amount;
    this.ids[slot]!.push(id);
    if (height > this.tip - this.window) this.windowSum += amount;
    let own = this.accounts.get(account);
    if (own === undefined) {
      own = new Array<bigint>(this.history).fill(0n);
      this.accounts.set(account, own);
    }
    own[slot]! += amount;
  }

  private reject(id: string): void {
    const w = this.byId.get(id);
    if (w === undefined || w.rejected) return;
    w.rejected = true;
    const slot = this.slot(w.height);
    this.ring[slot]! -= w.amount;
    this.accounts.get(w.account)![slot]! -= w.amount;
    if (w.height > this.tip - this.window) this.windowSum -= w.amount;
  }

  available(): bigint {
    return this.cap > this.windowSum ? this.cap - this.windowSum : 0n;
  }
}

/** The recompute: every request scans all stored withdrawals. */
export class ScanningService {
  private readonly rows: Array<{ id: string; amount: bigint; height: number; rejected: boolean }> =
    [];
  private readonly index = new Map<string, number>();
  private tip = -1;

  constructor(
    private readonly window: number,
    private readonly cap: bigint,
  ) {}

  apply(e: LimitsEvent): void {
    if (e.type === 'blockConnected') this.tip = e.height;
    else if (e.type === 'withdrawalRequested') {
      this.index.set(e.id, this.rows.length);
      this.rows.push({ id: e.id, amount: e.amount, height: e.height, rejected: false });
    } else if (e.type === 'withdrawalRejected') {
      const at = this.index.get(e.id);
      if (at !== undefined) this.rows[at]!.rejected = true;
    }
  }

  available(): bigint {
    let sum = 0n;
    const from = this.tip - this.window + 1;
    for (const r of this.rows)
      if (!r.rejected && r.height >= from && r.height <= this.tip) sum += r.amount;
    return this.cap > sum ? this.cap - sum : 0n;
  }
}
