/**
 * The benchmark workloads and their baselines: the mutable floor (the same bookkeeping
 * with plain mutable structures, no persistence) and the scanning recompute (what a
 * service that sums its stored withdrawals on every request does).
 */

export const WINDOW = 144;
export const HISTORY = 2016;
export const CAP = 10n ** 15n;
/** 1 in WINDOWED accounts has an entry with its own window. */
export const WINDOWED = 16;

/** The account names of a workload over `accounts` accounts. */
export function accountName(i) {
  return `acct${i}`;
}

/** The initial caps: the global window, and an own window for 1 in 16 accounts. */
export function limitsFor(accounts) {
  const accountCaps = {};
  for (let a = 0; a < accounts; a += WINDOWED)
    accountCaps[accountName(a)] = {
      rollingWithdrawalBlocks: BigInt(WINDOW),
      rollingWithdrawalCap: CAP / 100n,
    };
  return { rollingWithdrawalBlocks: BigInt(WINDOW), rollingWithdrawalCap: CAP, accountCaps };
}

/** A deterministic pseudo-random amount in satoshis (10k … 1M). */
function amountOf(i) {
  return BigInt(10_000 + ((i * 2654435761) % 990_000));
}

/**
 * A stream of `blocks` blocks with `perBlock` withdrawals each over `accounts` accounts,
 * 1 in 100 withdrawals rejected in the next block. `from` continues an earlier stream.
 */
export function stream({ blocks, perBlock, accounts, from = { height: 800_000, n: 0 } }) {
  const events = [];
  let pendingRejects = [];
  let n = from.n;
  let height = from.height;
  for (let b = 0; b < blocks; b++) {
    height++;
    events.push({ type: 'blockConnected', height });
    for (const id of pendingRejects) events.push({ type: 'withdrawalRejected', id });
    pendingRejects = [];
    for (let i = 0; i < perBlock; i++, n++) {
      const id = `w${n}`;
      const account = accountName((n * 7919) % accounts);
      events.push({ type: 'withdrawalRequested', id, account, amount: amountOf(n), height });
      if (n % 100 === 99) pendingRejects.push(id);
    }
  }
  return { events, next: { height, n } };
}

/**
 * The floor: a ring of per-block sums with a running window sum, a Map of withdrawals by
 * id with the ids listed per height (to forget them), and per-block sums for the accounts
 * with their own window. Everything mutable, nothing persistent. With `ownWindows: false`
 * it books only the global window, as a service without account windows does.
 */
export class MutableFloor {
  constructor(accounts, { ownWindows = true } = {}) {
    this.ring = new Array(HISTORY).fill(0n);
    this.ids = Array.from({ length: HISTORY }, () => []);
    this.byId = new Map();
    this.accounts = new Map();
    for (let a = 0; ownWindows && a < accounts; a += WINDOWED)
      this.accounts.set(accountName(a), new Array(HISTORY).fill(0n));
    this.windowSum = 0n;
    this.cap = CAP;
    this.tip = -1;
  }

  apply(e) {
    if (e.type === 'blockConnected') this.block(e.height);
    else if (e.type === 'withdrawalRequested') this.withdraw(e.id, e.account, e.amount, e.height);
    else if (e.type === 'withdrawalRejected') this.reject(e.id);
    else if (e.type === 'limitsUpdated') this.cap = e.limits.rollingWithdrawalCap;
    else if (e.type === 'accountLimitsSet') this.entry(e.account, e.limits);
  }

  // An entry set or removed: an account that gains its own window gets its per-block sums
  // from the withdrawals held (a scan of them all, as a mutable store without an index by
  // account does); one that loses it drops them.
  entry(account, limits) {
    if (limits.rollingWithdrawalBlocks === null || limits.rollingWithdrawalBlocks === undefined) {
      this.accounts.delete(account);
      return;
    }
    if (this.accounts.has(account)) return;
    const own = new Array(HISTORY).fill(0n);
    for (const w of this.byId.values())
      if (w.account === account && !w.rejected) own[w.height % HISTORY] += w.amount;
    this.accounts.set(account, own);
  }

  block(height) {
    for (let h = this.tip + 1; h <= height && this.tip >= 0; h++) {
      this.windowSum -= this.ring[(h - WINDOW) % HISTORY];
      const slot = h % HISTORY;
      for (const id of this.ids[slot]) {
        const w = this.byId.get(id);
        this.byId.delete(id);
        if (!w.rejected) {
          const own = this.accounts.get(w.account);
          if (own !== undefined) own[slot] -= w.amount;
        }
      }
      this.ids[slot] = [];
      this.ring[slot] = 0n;
    }
    this.tip = height;
  }

  withdraw(id, account, amount, height) {
    if (this.byId.has(id)) return;
    this.byId.set(id, { account, amount, height, rejected: false });
    const slot = height % HISTORY;
    this.ring[slot] += amount;
    this.ids[slot].push(id);
    if (height > this.tip - WINDOW) this.windowSum += amount;
    const own = this.accounts.get(account);
    if (own !== undefined) own[slot] += amount;
  }

  reject(id) {
    const w = this.byId.get(id);
    if (w === undefined || w.rejected) return;
    w.rejected = true;
    const slot = w.height % HISTORY;
    this.ring[slot] -= w.amount;
    const own = this.accounts.get(w.account);
    if (own !== undefined) own[slot] -= w.amount;
    if (w.height > this.tip - WINDOW) this.windowSum -= w.amount;
  }

  available() {
    return this.cap > this.windowSum ? this.cap - this.windowSum : 0n;
  }

  /** What an account's own window has withdrawn (undefined without one). */
  ownWithdrawn(account) {
    const own = this.accounts.get(account);
    if (own === undefined) return undefined;
    let sum = 0n;
    for (let h = this.tip - WINDOW + 1; h <= this.tip; h++) sum += own[h % HISTORY];
    return sum;
  }
}

/**
 * A long history as a chain writes it: `stream`'s blocks, withdrawals and rejections, and
 * the operators' limit changes in it: every 50 blocks the global window cap moves (by one
 * satoshi up or down), and every 400 blocks one account gains an entry with its own window
 * while the one before it loses its entry.
 */
export function history({ blocks, perBlock, accounts }) {
  const { events } = stream({ blocks, perBlock, accounts });
  const out = [];
  let block = 0;
  let moved = null;
  for (const e of events) {
    out.push(e);
    if (e.type !== 'blockConnected') continue;
    block++;
    if (block % 50 === 0)
      out.push({
        type: 'limitsUpdated',
        limits: { rollingWithdrawalCap: block % 100 === 0 ? CAP : CAP - 1n },
      });
    if (block % 400 === 0) {
      // An account that has no entry (1 in 16 do), gaining one; the last one losing it.
      const account = accountName((block / 400) * WINDOWED + 3);
      if (moved !== null) out.push({ type: 'accountLimitsSet', account: moved, limits: {} });
      out.push({
        type: 'accountLimitsSet',
        account,
        limits: { rollingWithdrawalBlocks: BigInt(WINDOW), rollingWithdrawalCap: CAP / 100n },
      });
      moved = account;
    }
  }
  return { events: out, moved };
}

/** The recompute: every request scans all stored withdrawals. */
export class ScanningService {
  constructor() {
    this.rows = [];
    this.index = new Map();
    this.tip = -1;
  }

  apply(e) {
    if (e.type === 'blockConnected') this.tip = e.height;
    else if (e.type === 'withdrawalRequested') {
      this.index.set(e.id, this.rows.length);
      this.rows.push({ amount: e.amount, height: e.height, rejected: false });
    } else if (e.type === 'withdrawalRejected') {
      const at = this.index.get(e.id);
      if (at !== undefined) this.rows[at].rejected = true;
    }
  }

  available() {
    let sum = 0n;
    const from = this.tip - WINDOW + 1;
    for (const r of this.rows)
      if (!r.rejected && r.height >= from && r.height <= this.tip) sum += r.amount;
    return CAP > sum ? CAP - sum : 0n;
  }
}

/**
 * The chain workload: a base of a whole history at 50 withdrawals a block (about 100k held
 * at the end), and the 20,000 events that follow it, to be applied one at a time.
 */
export function chainWorkload(accounts) {
  const base = stream({ blocks: HISTORY, perBlock: 50, accounts });
  const chain = stream({ blocks: 392, perBlock: 50, accounts, from: base.next }).events.slice(
    0,
    20_000,
  );
  return { base: base.events, chain };
}

/** Applies `events` one `apply` at a time from `state`, as a service does; returns the last state. */
export function applyEach(apply, state, events) {
  let s = state;
  for (const e of events) {
    const r = apply(s, e);
    if (!r.ok) throw r.error;
    s = r.state;
  }
  return s;
}
