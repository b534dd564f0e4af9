/**
 * A deliberately naive model of docs/semantics.md: a plain list of withdrawals, every figure
 * recomputed by scanning it. Slow and obvious, so the fast code can be compared with it.
 */
import type { Amount, Caps, ThrottleProfile, VerdictReason } from '../../src/index.js';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

export interface ModelWithdrawal {
  id: string;
  account: string;
  amount: bigint;
  height: number;
  rejected: boolean;
}

export interface ModelVerdict {
  ok: boolean;
  reason?: VerdictReason;
  availableAt?: number | null;
  limit?: Amount | null;
}

const MAX = 2n ** 63n - 1n;
const FIELDS = [
  'pegCap',
  'perDepositCap',
  'perDepositMinimum',
  'perWithdrawalCap',
  'rollingWithdrawalBlocks',
  'rollingWithdrawalCap',
  'rollingWithdrawalCapShare',
  'rollingMintBlocks',
  'rollingMintCap',
  'rollingMintCapShare',
] as const;

export interface ModelMint {
  id: string;
  account: string;
  amount: bigint;
  height: number;
}

export interface ModelChange {
  id: number;
  events: ReadonlyArray<Record<string, unknown>>;
  proposedBy: string;
  proposedAt: number | null;
  delayBlocks: number | null;
  effectiveAt: number | null;
  quorum: number;
  approvals: string[];
}

const CHANGE_TYPES = [
  'pegIntegritySet',
  'pegBreakerCleared',
  'limitsSet',
  'limitsUpdated',
  'accountLimitsSet',
  'throttleEnded',
  'throttleKeyAdded',
  'throttleKeyRevoked',
  'throttleKeyReactivated',
  'mintHistoryCompleteFrom',
];
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const NAME = /^[^\u0000-\u001f\u007f-\u009f]{1,256}$/;

const minB = (a: bigint, b: bigint) => (a < b ? a : b);
const maxB = (a: bigint, b: bigint) => (a > b ? a : b);

export class NaiveModel {
  tip: number | null = null;
  highest: number | null = null;
  withdrawals: ModelWithdrawal[] = [];
  /** Every mint held (inside the history). */
  mints: ModelMint[] = [];
  /** The height from which every mint is known; null: from the start. */
  mintCompleteFrom: number | null = null;
  global: Caps;
  entries = new Map<string, Caps>();
  pegged = 0n;
  /** The height from which every withdrawal is known; null: from the start. */
  completeFrom: number | null = null;
  /** The burn height from which a feed holds blocks; null: none held. */
  heldFrom: number | null = null;
  accountPegged = new Map<string, bigint>();
  throttle: string | null = null;
  keys = new Map<string, { hash: string; revoked: boolean }>();
  changes: ModelChange[] = [];
  nextChangeId = 1;
  /** Every global total observed, with the tip it was applied at, in order (never pruned). */
  observations: Array<{ tip: number | null; total: bigint }> = [];
  accountObservations = new Map<string, Array<{ tip: number | null; total: bigint }>>();
  reserves: { total: bigint; height: number } | null = null;
  maxUnbacked: bigint | null = null;
  reservesMaxAge = 6;
  tripped: {
    height: number | null;
    peggedTotal: bigint;
    reserves: bigint;
    unbacked: bigint;
  } | null = null;

  constructor(
    readonly history: number,
    readonly profile: ThrottleProfile,
    global: Caps,
  ) {
    this.global = global;
  }

  clone(): NaiveModel {
    const m = new NaiveModel(this.history, this.profile, this.global);
    m.tip = this.tip;
    m.highest = this.highest;
    m.withdrawals = this.withdrawals.map((w) => ({ ...w }));
    m.mints = [...this.mints];
    m.mintCompleteFrom = this.mintCompleteFrom;
    m.entries = new Map(this.entries);
    m.pegged = this.pegged;
    m.completeFrom = this.completeFrom;
    m.heldFrom = this.heldFrom;
    m.accountPegged = new Map(this.accountPegged);
    m.throttle = this.throttle;
    m.keys = new Map([...this.keys].map(([k, v]) => [k, { ...v }]));
    m.changes = this.changes.map((c) => ({ ...c, approvals: [...c.approvals] }));
    m.nextChangeId = this.nextChangeId;
    m.observations = [...this.observations];
    m.accountObservations = new Map([...this.accountObservations].map(([k, v]) => [k, [...v]]));
    m.reserves = this.reserves;
    m.maxUnbacked = this.maxUnbacked;
    m.reservesMaxAge = this.reservesMaxAge;
    m.tripped = this.tripped;
    return m;
  }

  // --- validation, restated -------------------------------------------------------------

  /** The error code of invalid caps, or undefined. */
  capsError(c: Partial<Record<string, unknown>>): string | undefined {
    for (const k of Object.keys(c))
      if (!(FIELDS as readonly string[]).includes(k)) return 'unknown_field';
    for (const f of FIELDS) {
      const v = c[f];
      if (v === undefined || v === null) continue;
      if (typeof v !== 'bigint' || v < 0n || v > MAX) return 'invalid_amount';
    }
    for (const [b, k, sh] of [
      ['rollingWithdrawalBlocks', 'rollingWithdrawalCap', 'rollingWithdrawalCapShare'],
      ['rollingMintBlocks', 'rollingMintCap', 'rollingMintCapShare'],
    ] as const) {
      const blocks = (c[b] ?? null) as bigint | null;
      const cap = (c[k] ?? null) as bigint | null;
      if ((blocks === null) !== (cap === null)) return 'incomplete_rolling_window';
      if (blocks !== null && blocks < 1n) return 'invalid_amount';
      if (blocks !== null && blocks > BigInt(this.history)) return 'window_exceeds_history';
      const share = (c[sh] ?? null) as bigint | null;
      if (share !== null && (share < 1n || share > 10_000n)) return 'invalid_share';
      if (share !== null && blocks === null) return 'incomplete_rolling_window';
    }
    const min = (c.perDepositMinimum ?? null) as bigint | null;
    const dcap = (c.perDepositCap ?? null) as bigint | null;
    if (min !== null && dcap !== null && min > dcap) return 'minimum_above_cap';
    return undefined;
  }

  static caps(c: Partial<Record<string, unknown>>): Caps {
    const out: Record<string, bigint | null> = {};
    for (const f of FIELDS) out[f] = (c[f] ?? null) as bigint | null;
    return out as unknown as Caps;
  }

  // --- events ---------------------------------------------------------------------------

  /**
   * Applies an event in place; returns the error code when it is invalid (and changes
   * nothing). After every event, the breaker: the first time the peg is unbacked, it trips.
   */
  apply(e: Record<string, unknown>): string | undefined {
    const error = this.applyOne(e);
    if (error === undefined && this.maxUnbacked !== null && this.tripped === null) {
      const unbacked = this.unbacked();
      if (unbacked !== null && unbacked > this.maxUnbacked)
        this.tripped = {
          height: this.tip,
          peggedTotal: this.pegged,
          reserves: this.reserves!.total,
          unbacked,
        };
    }
    return error;
  }

  private applyOne(e: Record<string, unknown>): string | undefined {
    switch (e.type) {
      case 'blockConnected': {
        const h = e.height as number;
        if (!Number.isSafeInteger(h) || h < 0) return 'invalid_height';
        if (this.tip !== null && h <= this.tip) return 'height_not_above_tip';
        this.tip = h;
        this.highest = this.highest === null ? h : Math.max(this.highest, h);
        this.forget();
        this.applyDue();
        return undefined;
      }
      case 'chainReorganized': {
        const h = e.height as number;
        if (!Number.isSafeInteger(h) || h < 0) return 'invalid_height';
        if (this.tip === null || h >= this.tip) return 'height_not_below_tip';
        if (h <= (this.highest as number) - this.history) return 'reorg_too_deep';
        this.tip = h;
        this.withdrawals = this.withdrawals.filter((w) => w.height <= h);
        this.mints = this.mints.filter((m) => m.height <= h);
        return undefined;
      }
      case 'depositMinted': {
        const { id, account, amount, height } = e as unknown as ModelMint;
        if (typeof id !== 'string' || id.length === 0 || id.length > 256)
          return 'invalid_deposit_id';
        if (typeof account !== 'string' || !NAME.test(account)) return 'invalid_account';
        if (typeof amount !== 'bigint' || amount <= 0n || amount > MAX) return 'invalid_amount';
        if (!Number.isSafeInteger(height) || height < 0) return 'invalid_height';
        if (this.tip === null || height > this.tip) return 'height_ahead_of_tip';
        const known = this.mints.find((m) => m.id === id);
        if (known)
          return known.account === account && known.amount === amount && known.height === height
            ? undefined
            : 'duplicate_deposit';
        if (height > (this.highest as number) - this.history)
          this.mints.push({ id, account, amount, height });
        return undefined;
      }
      case 'mintHistoryCompleteFrom': {
        const h = e.height as number;
        if (!Number.isSafeInteger(h) || h < 0) return 'invalid_height';
        this.mintCompleteFrom = h;
        return undefined;
      }
      case 'withdrawalRequested': {
        const { id, account, amount, height } = e as unknown as ModelWithdrawal;
        if (typeof id !== 'string' || id.length === 0 || id.length > 256)
          return 'invalid_withdrawal_id';
        if (typeof account !== 'string' || account.length === 0) return 'invalid_account';
        if (typeof amount !== 'bigint' || amount <= 0n || amount > MAX) return 'invalid_amount';
        if (!Number.isSafeInteger(height) || height < 0) return 'invalid_height';
        if (this.tip === null || height > this.tip) return 'height_ahead_of_tip';
        const known = this.withdrawals.find((w) => w.id === id);
        if (known) {
          return known.account === account && known.amount === amount && known.height === height
            ? undefined
            : 'duplicate_withdrawal';
        }
        if (height > (this.highest as number) - this.history) {
          this.withdrawals.push({ id, account, amount, height, rejected: false });
        }
        return undefined;
      }
      case 'withdrawalRejected': {
        const w = this.withdrawals.find((x) => x.id === e.id);
        if (!w) return 'unknown_withdrawal';
        w.rejected = true;
        return undefined;
      }
      case 'limitsSet': {
        const l = e.limits as Record<string, unknown>;
        const { accountCaps, ...rest } = l;
        const err = this.capsError(rest);
        if (err) return err;
        const ac = (accountCaps ?? {}) as Record<string, Record<string, unknown>>;
        for (const k of Object.keys(ac)) {
          const entryErr = this.capsError(ac[k]!);
          if (entryErr) return entryErr;
        }
        this.global = NaiveModel.caps(rest);
        for (const k of Object.keys(ac)) this.setEntry(k, NaiveModel.caps(ac[k]!));
        this.throttle = null;
        return undefined;
      }
      case 'limitsUpdated': {
        // Only the fields named change; what they make together is checked as a whole.
        const l = e.limits as Record<string, unknown>;
        const { accountCaps, ...rest } = l;
        const named = (c: Record<string, unknown>) =>
          Object.fromEntries(Object.entries(c).filter(([, v]) => v !== undefined));
        for (const k of Object.keys(rest))
          if (!(FIELDS as readonly string[]).includes(k)) return 'unknown_field';
        const global = { ...this.global, ...named(rest) };
        const err = this.capsError(global);
        if (err) return err;
        const ac = (accountCaps ?? {}) as Record<string, Record<string, unknown>>;
        const entries: Array<[string, Caps]> = [];
        for (const k of Object.keys(ac)) {
          for (const f of Object.keys(ac[k]!))
            if (!(FIELDS as readonly string[]).includes(f)) return 'unknown_field';
          const entry = { ...(this.entries.get(k) ?? NaiveModel.caps({})), ...named(ac[k]!) };
          const entryErr = this.capsError(entry);
          if (entryErr) return entryErr;
          entries.push([k, NaiveModel.caps(entry)]);
        }
        this.global = NaiveModel.caps(global);
        for (const [k, c] of entries) this.setEntry(k, c);
        return undefined;
      }
      case 'accountLimitsSet': {
        const err = this.capsError(e.limits as Record<string, unknown>);
        if (err) return err;
        this.setEntry(e.account as string, NaiveModel.caps(e.limits as Record<string, unknown>));
        return undefined;
      }
      case 'withdrawalRejectionUndone': {
        if (typeof e.id !== 'string' || e.id.length === 0 || e.id.length > 256)
          return 'invalid_withdrawal_id';
        const w = this.withdrawals.find((x) => x.id === e.id);
        if (!w) return 'unknown_withdrawal';
        w.rejected = false;
        return undefined;
      }
      case 'historyCompleteFrom': {
        const h = e.height as number;
        if (!Number.isSafeInteger(h) || h < 0) return 'invalid_height';
        this.completeFrom = h;
        return undefined;
      }
      case 'blocksHeld': {
        const h = e.height as number;
        if (!Number.isSafeInteger(h) || h < 0) return 'invalid_height';
        this.heldFrom ??= h;
        return undefined;
      }
      case 'blocksReleased':
        this.heldFrom = null;
        return undefined;
      case 'peggedTotalObserved': {
        const t = e.total as bigint;
        if (typeof t !== 'bigint' || t < 0n || t > MAX) return 'invalid_amount';
        const observation = { tip: this.tip, total: t };
        if (e.account === undefined) {
          this.pegged = t;
          this.observations.push(observation);
        } else {
          const a = e.account as string;
          this.accountPegged.set(a, t);
          this.accountObservations.set(a, [
            ...(this.accountObservations.get(a) ?? []),
            observation,
          ]);
        }
        return undefined;
      }
      case 'reservesObserved': {
        const t = e.total as bigint;
        if (typeof t !== 'bigint' || t < 0n || t > MAX) return 'invalid_amount';
        const h = e.height as number;
        if (!Number.isSafeInteger(h) || h < 0) return 'invalid_height';
        this.reserves = { total: t, height: h };
        return undefined;
      }
      case 'pegIntegritySet': {
        if (!('maxUnbacked' in e)) return 'invalid_event';
        const max = e.maxUnbacked as bigint | null;
        if (max !== null && (typeof max !== 'bigint' || max < 0n || max > MAX))
          return 'invalid_amount';
        const age = e.reservesMaxAge as number;
        if (!Number.isSafeInteger(age) || age < 1) return 'invalid_amount';
        this.maxUnbacked = max;
        this.reservesMaxAge = age;
        if (max === null) this.tripped = null;
        return undefined;
      }
      case 'pegBreakerCleared':
        this.tripped = null;
        return undefined;
      case 'throttleKeyAdded': {
        if (typeof e.name !== 'string' || !NAME.test(e.name)) return 'invalid_key_name';
        if (typeof e.secretHash !== 'string' || !e.secretHash.startsWith('sha256:'))
          return 'invalid_secret_hash';
        if (this.keys.has(e.name as string)) return 'duplicate_key';
        this.keys.set(e.name as string, { hash: e.secretHash as string, revoked: false });
        return undefined;
      }
      case 'throttleKeyRevoked':
      case 'throttleKeyReactivated': {
        const k = this.keys.get(e.name as string);
        if (!k) return 'unknown_key';
        k.revoked = e.type === 'throttleKeyRevoked';
        return undefined;
      }
      case 'throttleStarted': {
        this.throttle ??= e.initiator as string;
        // Whoever may pull the brake may veto a loosening: every pending change goes.
        this.changes = [];
        return undefined;
      }
      case 'changeProposed':
        return this.propose(e);
      case 'changeApproved': {
        const c = this.changes.find((x) => x.id === e.id);
        if (!c) return 'change_not_found';
        if (c.approvals.includes(e.by as string)) return undefined;
        c.approvals.push(e.by as string);
        if (c.quorum !== 0 && c.approvals.length >= c.quorum) {
          this.changes = this.changes.filter((x) => x !== c);
          this.settle(c);
        }
        return undefined;
      }
      case 'changeCancelled': {
        if (!this.changes.some((x) => x.id === e.id)) return 'change_not_found';
        this.changes = this.changes.filter((x) => x.id !== e.id);
        return undefined;
      }
      case 'throttleEnded':
        this.throttle = null;
        return undefined;
      default:
        return 'invalid_event';
    }
  }

  /** Applies a batch to a copy: the copy, or the first error code (the model untouched). */
  tryBatch(events: ReadonlyArray<Record<string, unknown>>): NaiveModel | string {
    const copy = this.clone();
    for (const e of events) {
      const err = copy.apply(e);
      if (err !== undefined) return err;
    }
    return copy;
  }

  private propose(e: Record<string, unknown>): string | undefined {
    if (typeof e.proposedBy !== 'string' || !NAME.test(e.proposedBy)) return 'invalid_change';
    const delay = e.delayBlocks as number | null;
    if (delay !== null && !(Number.isSafeInteger(delay) && delay >= 1 && delay <= 1_000_000))
      return 'invalid_change';
    const quorum = e.quorum as number;
    if (!Number.isSafeInteger(quorum) || quorum === 1 || quorum < 0 || quorum > 1000)
      return 'invalid_change';
    if (delay === null && quorum === 0) return 'invalid_change';
    const events = e.events as Array<Record<string, unknown>>;
    if (!Array.isArray(events) || events.length === 0) return 'invalid_change';
    if (events.some((x) => !CHANGE_TYPES.includes(x.type as string))) return 'invalid_change';
    const after = this.tryBatch(events);
    if (typeof after === 'string') return after;
    if (!naiveLoosens(this, after)) return 'change_loosens_nothing';
    this.changes.push({
      id: this.nextChangeId++,
      events,
      proposedBy: e.proposedBy,
      proposedAt: this.tip,
      delayBlocks: delay,
      effectiveAt: delay === null || this.tip === null ? null : this.tip + delay,
      quorum,
      approvals: [e.proposedBy],
    });
    return undefined;
  }

  // A change's batch applies whole on the model as it is, or the change is dropped.
  private settle(change: ModelChange): void {
    const after = this.tryBatch(change.events);
    if (typeof after === 'string') return;
    const changes = this.changes;
    const next = this.nextChangeId;
    Object.assign(this, after);
    this.changes = changes;
    this.nextChangeId = next;
  }

  private applyDue(): void {
    const tip = this.tip as number;
    for (const c of this.changes)
      if (c.effectiveAt === null && c.delayBlocks !== null) c.effectiveAt = tip + c.delayBlocks;
    const due = this.changes.filter((c) => c.effectiveAt !== null && c.effectiveAt <= tip);
    this.changes = this.changes.filter((c) => !due.includes(c));
    for (const c of due) this.settle(c);
  }

  private setEntry(account: string, caps: Caps): void {
    if (FIELDS.every((f) => caps[f] === null)) this.entries.delete(account);
    else this.entries.set(account, caps);
  }

  private forget(): void {
    const oldest = (this.highest as number) - this.history;
    this.withdrawals = this.withdrawals.filter((w) => w.height > oldest);
    this.mints = this.mints.filter((m) => m.height > oldest);
  }

  // --- views ----------------------------------------------------------------------------

  /**
   * The global caps in force at tip `at`: the fixed ones (overlay included), the share of the
   * basis laid on, then zero caps while failing closed on the peg's backing.
   */
  globalCapsInForce(at: number | null = this.tip): Caps {
    const basis = (blocks: bigint | null) =>
      blocks === null ? this.pegged : naiveBasis(this.observations, at, blocks);
    const caps = this.withShare(
      this.fixedGlobal(),
      basis(this.global.rollingWithdrawalBlocks),
      basis(this.global.rollingMintBlocks),
    );
    if (this.failure() === null) return caps;
    return {
      ...caps,
      perDepositCap: 0n,
      perWithdrawalCap: 0n,
      rollingWithdrawalCap: caps.rollingWithdrawalCap === null ? null : 0n,
      rollingMintCap: caps.rollingMintCap === null ? null : 0n,
    };
  }

  /** An entry in force at tip `at`: its fixed caps, its share of its own basis, then zeros. */
  entryCapsInForce(account: string, at: number | null = this.tip): Caps | undefined {
    const e = this.fixedEntry(account);
    if (e === undefined) return e;
    const basis = (blocks: bigint | null) =>
      blocks === null
        ? (this.accountPegged.get(account) ?? 0n)
        : naiveBasis(this.accountObservations.get(account) ?? [], at, blocks);
    const configured = this.entries.get(account)!;
    const caps = this.withShare(
      e,
      basis(configured.rollingWithdrawalBlocks),
      basis(configured.rollingMintBlocks),
    );
    if (this.failure() === null) return caps;
    const zero = (v: bigint | null) => (v === null ? null : 0n);
    return {
      ...caps,
      perDepositCap: zero(caps.perDepositCap),
      perWithdrawalCap: zero(caps.perWithdrawalCap),
      rollingWithdrawalCap: zero(caps.rollingWithdrawalCap),
      rollingMintCap: zero(caps.rollingMintCap),
    };
  }

  /** The reserves short of the total while they are known (read, fresh at the tip); else null. */
  unbacked(): bigint | null {
    const r = this.reserves;
    if (r === null) return null;
    if (this.tip !== null && this.tip - r.height > this.reservesMaxAge) return null;
    return maxB(this.pegged - r.total, 0n);
  }

  /** Why the limits fail closed on the peg's backing, or null. */
  failure(): 'peg_unbacked' | 'reserves_unknown' | null {
    if (this.maxUnbacked === null) return null;
    if (this.tripped !== null) return 'peg_unbacked';
    return this.unbacked() === null ? 'reserves_unknown' : null;
  }

  /** GET /integrity, recomputed. */
  integrity() {
    const failure = this.failure();
    return {
      state:
        this.maxUnbacked === null
          ? 'off'
          : failure === 'peg_unbacked'
            ? 'tripped'
            : failure === 'reserves_unknown'
              ? 'reserves_unknown'
              : 'backed',
      peggedTotal: this.pegged,
      reserves: this.reserves?.total ?? null,
      reservesHeight: this.reserves?.height ?? null,
      unbacked: this.unbacked(),
      maxUnbacked: this.maxUnbacked,
      reservesMaxAge: this.reservesMaxAge,
      tripped: this.tripped,
    };
  }

  // The window caps in force: the lower of each cap and its share of its basis, rounded down.
  private withShare(caps: Caps, total: bigint, mintTotal: bigint): Caps {
    const under = (cap: bigint | null, share: bigint | null, t: bigint) =>
      cap === null || share === null ? cap : minB(cap, (t * share) / 10_000n);
    return {
      ...caps,
      rollingWithdrawalCap: under(caps.rollingWithdrawalCap, caps.rollingWithdrawalCapShare, total),
      rollingMintCap: under(caps.rollingMintCap, caps.rollingMintCapShare, mintTotal),
    };
  }

  fixedGlobal(): Caps {
    const g = this.global;
    if (this.throttle === null) return g;
    const p = this.profile;
    return {
      ...g,
      perWithdrawalCap:
        g.perWithdrawalCap === null
          ? p.perWithdrawalCap
          : minB(g.perWithdrawalCap, p.perWithdrawalCap),
      rollingWithdrawalBlocks:
        g.rollingWithdrawalBlocks === null
          ? p.rollingWithdrawalBlocks
          : maxB(g.rollingWithdrawalBlocks, p.rollingWithdrawalBlocks),
      rollingWithdrawalCap:
        g.rollingWithdrawalCap === null
          ? p.rollingWithdrawalCap
          : minB(g.rollingWithdrawalCap, p.rollingWithdrawalCap),
    };
  }

  fixedEntry(account: string): Caps | undefined {
    const e = this.entries.get(account);
    if (e === undefined || this.throttle === null) return e;
    const p = this.profile;
    return {
      ...e,
      perWithdrawalCap:
        e.perWithdrawalCap === null ? null : minB(e.perWithdrawalCap, p.perWithdrawalCap),
      rollingWithdrawalBlocks:
        e.rollingWithdrawalBlocks === null
          ? null
          : maxB(e.rollingWithdrawalBlocks, p.rollingWithdrawalBlocks),
      rollingWithdrawalCap:
        e.rollingWithdrawalCap === null
          ? null
          : minB(e.rollingWithdrawalCap, p.rollingWithdrawalCap),
    };
  }

  /** Whether the window of `blocks` ending at tip `at` reaches below the complete history. */
  incomplete(blocks: bigint, at: number | null = this.tip): boolean {
    if (this.completeFrom === null) return false;
    return at === null || at - Number(blocks) + 1 < this.completeFrom;
  }

  /** The first tip from `at` on whose windows (those given) are all complete: tried one by one. */
  completeAt(blocks: Array<bigint | null>, at: number | null = this.tip): number | null {
    const set = blocks.filter((b): b is bigint => b !== null);
    if (!set.some((b) => this.incomplete(b, at))) return null;
    let t = at ?? 0;
    while (set.some((b) => this.incomplete(b, t))) t++;
    return t;
  }

  /** Withdrawn in the window of `blocks` ending at tip `at` (default: the tip), optionally for one account. */
  withdrawn(blocks: bigint, account?: string, at: number | null = this.tip): bigint {
    if (at === null) return 0n;
    const from = at - Number(blocks) + 1;
    let sum = 0n;
    for (const w of this.withdrawals) {
      if (w.rejected || w.height < from || w.height > at) continue;
      if (account !== undefined && w.account !== account) continue;
      sum += w.amount;
    }
    return sum;
  }

  /** Minted in the mint window of `blocks` ending at tip `at`, optionally for one account. */
  minted(blocks: bigint, account?: string, at: number | null = this.tip): bigint {
    if (at === null) return 0n;
    const from = at - Number(blocks) + 1;
    let sum = 0n;
    for (const m of this.mints) {
      if (m.height < from || m.height > at) continue;
      if (account !== undefined && m.account !== account) continue;
      sum += m.amount;
    }
    return sum;
  }

  /** Whether the mint window of `blocks` ending at `at` reaches below the mint history's start. */
  mintIncomplete(blocks: bigint, at: number | null = this.tip): boolean {
    if (this.mintCompleteFrom === null) return false;
    return at === null || at - Number(blocks) + 1 < this.mintCompleteFrom;
  }

  /** The first tip from `at` on whose mint windows (those given) are all complete. */
  mintCompleteAt(blocks: Array<bigint | null>, at: number | null = this.tip): number | null {
    const set = blocks.filter((b): b is bigint => b !== null);
    if (!set.some((b) => this.mintIncomplete(b, at))) return null;
    let t = at ?? 0;
    while (set.some((b) => this.mintIncomplete(b, t))) t++;
    return t;
  }

  /** A mint window's room: null without one or while unknown; 0 while failing closed. */
  mintRoom(caps: Caps | undefined, account?: string): bigint | null {
    const blocks = caps?.rollingMintBlocks ?? null;
    if (blocks === null || caps!.rollingMintCap === null) return null;
    if (this.failure() !== null) return 0n;
    if (this.heldFrom !== null || this.mintIncomplete(blocks)) return null;
    return maxB(caps!.rollingMintCap - this.minted(blocks, account), 0n);
  }

  /** The peg cap the signers read: as configured without a mint window, else capped by the room. */
  pegCapShown(caps: Caps, total: bigint, account?: string): bigint | null {
    if (caps.rollingMintBlocks === null) return caps.pegCap;
    const cap = total + (this.mintRoom(caps, account) ?? 0n);
    const under = caps.pegCap === null ? cap : minB(caps.pegCap, cap);
    return minB(under, MAX);
  }

  limits() {
    const g = this.globalCapsInForce();
    const accountCaps: Record<string, unknown> = {};
    for (const name of [...this.entries.keys()].sort()) {
      // The six caps of the interface, in force, and the mint window; the share is reported
      // by the window alone.
      const e = this.entryCapsInForce(name)!;
      const { rollingWithdrawalCapShare: _s, ...shown } = e;
      accountCaps[name] = {
        ...shown,
        pegCap: this.pegCapShown(e, this.accountPegged.get(name) ?? 0n, name),
        throttleModeInitiator: this.throttle,
      };
    }
    const room =
      g.rollingWithdrawalCap === null
        ? null
        : g.rollingWithdrawalCap - this.withdrawn(g.rollingWithdrawalBlocks!);
    return {
      availableToWithdraw:
        this.failure() !== null
          ? 0n
          : room === null || this.heldFrom !== null || this.incomplete(g.rollingWithdrawalBlocks!)
            ? null
            : maxB(room, 0n),
      pegCap: this.pegCapShown(g, this.pegged),
      perDepositCap: g.perDepositCap,
      perDepositMinimum: g.perDepositMinimum,
      perWithdrawalCap: g.perWithdrawalCap,
      rollingWithdrawalBlocks: g.rollingWithdrawalBlocks,
      rollingWithdrawalCap: g.rollingWithdrawalCap,
      throttleModeInitiator: this.throttle,
      rollingMintBlocks: g.rollingMintBlocks,
      rollingMintCap: g.rollingMintCap,
      rollingMintCapShare: g.rollingMintCapShare,
      availableToMint: this.mintRoom(g),
      accountCaps,
    };
  }

  resolved(account: string, at: number | null = this.tip) {
    const g = this.globalCapsInForce(at);
    const e = this.entryCapsInForce(account, at);
    return {
      perWithdrawalCap: e?.perWithdrawalCap ?? g.perWithdrawalCap,
      perDepositCap: e?.perDepositCap ?? g.perDepositCap,
      perDepositMinimum: e ? e.perDepositMinimum : g.perDepositMinimum,
      pegCap: g.pegCap,
      accountPegCap: e ? e.pegCap : null,
      global: g,
      entry: e,
    };
  }

  /**
   * checkWithdrawal, at tip `at`, with `extra` already admitted in this batch (they sit at
   * their height, the tip they were admitted at, and leave the window like any other).
   * A refusal by a window cap says when the request would fit: `availableAt`.
   */
  checkWithdrawal(
    account: string,
    amount: bigint,
    at: number | null = this.tip,
    extra: ModelWithdrawal[] = [],
  ): ModelVerdict {
    const v = this.verdictAt(account, amount, at, extra);
    if (!v.ok && v.reason === 'window_incomplete') {
      const r = this.resolved(account);
      // While blocks are held, nobody knows when the room comes back.
      if (this.heldFrom !== null) return { ...v, availableAt: null };
      return {
        ...v,
        availableAt: this.completeAt(
          [r.global.rollingWithdrawalBlocks, r.entry?.rollingWithdrawalBlocks ?? null],
          at,
        ),
      };
    }
    if (
      !v.ok &&
      (v.reason === 'rolling_cap_exceeded' || v.reason === 'account_rolling_cap_exceeded')
    )
      return { ...v, availableAt: this.whenAvailable(account, amount, extra) };
    return v.ok ? v : { ...v, availableAt: null };
  }

  private verdictAt(
    account: string,
    amount: bigint,
    at: number | null,
    extra: ModelWithdrawal[],
  ): ModelVerdict {
    const failure = this.failure();
    if (failure !== null) return { ok: false, reason: failure, limit: 0n };
    const r = this.resolved(account, at);
    if (r.perWithdrawalCap !== null && amount > r.perWithdrawalCap) {
      return { ok: false, reason: 'above_per_withdrawal_cap', limit: r.perWithdrawalCap };
    }
    if (
      this.heldFrom !== null &&
      (r.global.rollingWithdrawalBlocks !== null || r.entry?.rollingWithdrawalBlocks != null)
    )
      return { ok: false, reason: 'window_incomplete', limit: null };
    if (
      this.incomplete(r.global.rollingWithdrawalBlocks ?? 0n, at) &&
      r.global.rollingWithdrawalBlocks !== null
    )
      return { ok: false, reason: 'window_incomplete', limit: null };
    if (
      r.entry?.rollingWithdrawalBlocks != null &&
      this.incomplete(r.entry.rollingWithdrawalBlocks, at)
    )
      return { ok: false, reason: 'window_incomplete', limit: null };
    const inWindow = (w: ModelWithdrawal, blocks: bigint) =>
      at === null || w.height > at - Number(blocks);
    const g = r.global;
    if (g.rollingWithdrawalCap !== null) {
      const extraAll = extra
        .filter((w) => inWindow(w, g.rollingWithdrawalBlocks!))
        .reduce((s, w) => s + w.amount, 0n);
      const room = maxB(
        g.rollingWithdrawalCap -
          this.withdrawn(g.rollingWithdrawalBlocks!, undefined, at) -
          extraAll,
        0n,
      );
      if (amount > room) return { ok: false, reason: 'rolling_cap_exceeded', limit: room };
    }
    const e = r.entry;
    if (e?.rollingWithdrawalCap != null) {
      const mine = extra
        .filter((w) => w.account === account && inWindow(w, e.rollingWithdrawalBlocks!))
        .reduce((s, w) => s + w.amount, 0n);
      const room = maxB(
        e.rollingWithdrawalCap - this.withdrawn(e.rollingWithdrawalBlocks!, account, at) - mine,
        0n,
      );
      if (amount > room) return { ok: false, reason: 'account_rolling_cap_exceeded', limit: room };
    }
    return { ok: true };
  }

  /**
   * checkDeposit, with `extra` admitted before in this batch (minted at the tip): a refusal by
   * the peg or per-deposit rules never says when it would pass; one by a mint window does.
   */
  checkDeposit(account: string, amount: bigint, extra: ModelWithdrawal[] = []): ModelVerdict {
    const v = this.depositVerdict(account, amount, extra);
    if (v.ok) return v;
    if (v.reason === 'mint_window_incomplete') {
      if (this.heldFrom !== null) return { ...v, availableAt: null };
      const r = this.resolved(account);
      return {
        ...v,
        availableAt: this.mintCompleteAt([
          r.global.rollingMintBlocks,
          r.entry?.rollingMintBlocks ?? null,
        ]),
      };
    }
    if (
      v.reason === 'rolling_mint_cap_exceeded' ||
      v.reason === 'account_rolling_mint_cap_exceeded'
    )
      return { ...v, availableAt: this.whenMintable(account, amount, extra) };
    return { ...v, availableAt: null };
  }

  /** Tries every tip from the current one upwards: the first at which the deposit passes. */
  whenMintable(account: string, amount: bigint, extra: ModelWithdrawal[] = []): number | null {
    if (this.tip === null || this.failure() !== null) return null;
    const now = this.depositVerdict(account, amount, extra);
    if (
      !now.ok &&
      now.reason !== 'mint_window_incomplete' &&
      now.reason !== 'rolling_mint_cap_exceeded' &&
      now.reason !== 'account_rolling_mint_cap_exceeded'
    )
      return null;
    if (this.heldFrom !== null && !now.ok) return null;
    const observed = [...this.observations, ...(this.accountObservations.get(account) ?? [])];
    const top = Math.max(this.tip, ...observed.map((o) => o.tip ?? 0));
    const limit = Math.max(top, this.mintCompleteFrom ?? 0) + this.history + 1;
    for (let at = this.tip; at <= limit; at++)
      if (this.depositVerdict(account, amount, extra, at).ok)
        return at > Number.MAX_SAFE_INTEGER ? null : at;
    return null;
  }

  private depositVerdict(
    account: string,
    amount: bigint,
    extra: ModelWithdrawal[],
    at: number | null = this.tip,
  ): ModelVerdict {
    const failure = this.failure();
    if (failure !== null) return { ok: false, reason: failure, limit: 0n };
    const r = this.resolved(account, at);
    if (r.perDepositMinimum !== null && amount < r.perDepositMinimum) {
      return { ok: false, reason: 'below_minimum', limit: r.perDepositMinimum };
    }
    if (r.perDepositCap !== null && amount > r.perDepositCap) {
      return { ok: false, reason: 'above_per_deposit_cap', limit: r.perDepositCap };
    }
    if (r.pegCap !== null) {
      const room = maxB(r.pegCap - this.pegged - extra.reduce((s, w) => s + w.amount, 0n), 0n);
      if (amount > room) return { ok: false, reason: 'peg_cap_exceeded', limit: room };
    }
    if (r.accountPegCap !== null) {
      const mine = extra.filter((w) => w.account === account).reduce((s, w) => s + w.amount, 0n);
      const room = maxB(r.accountPegCap - (this.accountPegged.get(account) ?? 0n) - mine, 0n);
      if (amount > room) return { ok: false, reason: 'account_peg_cap_exceeded', limit: room };
    }
    const g = r.global;
    const e = r.entry;
    const windows = [g.rollingMintBlocks, e?.rollingMintBlocks ?? null];
    if (windows.some((b) => b !== null)) {
      if (this.heldFrom !== null)
        return { ok: false, reason: 'mint_window_incomplete', limit: null };
      if (windows.some((b) => b !== null && this.mintIncomplete(b, at)))
        return { ok: false, reason: 'mint_window_incomplete', limit: null };
    }
    // What the batch admitted sits at the tip it was admitted at, and leaves the window as any mint.
    const inWindow = (w: ModelWithdrawal, blocks: bigint) =>
      at === null || w.height > at - Number(blocks);
    if (g.rollingMintCap !== null) {
      const before = extra
        .filter((w) => inWindow(w, g.rollingMintBlocks!))
        .reduce((s, w) => s + w.amount, 0n);
      const room = maxB(
        g.rollingMintCap - this.minted(g.rollingMintBlocks!, undefined, at) - before,
        0n,
      );
      if (amount > room) return { ok: false, reason: 'rolling_mint_cap_exceeded', limit: room };
    }
    if (e?.rollingMintCap != null) {
      const mine = extra
        .filter((w) => w.account === account && inWindow(w, e.rollingMintBlocks!))
        .reduce((s, w) => s + w.amount, 0n);
      const room = maxB(
        e.rollingMintCap - this.minted(e.rollingMintBlocks!, account, at) - mine,
        0n,
      );
      if (amount > room)
        return { ok: false, reason: 'account_rolling_mint_cap_exceeded', limit: room };
    }
    return { ok: true };
  }

  /** Tries every tip height from the current one upwards (with `extra` admitted before). */
  whenAvailable(account: string, amount: bigint, extra: ModelWithdrawal[] = []): number | null {
    if (this.tip === null || this.failure() !== null) return null;
    // Held blocks hold every window that applies: no tip is known at which it passes.
    const r = this.resolved(account);
    if (
      this.heldFrom !== null &&
      (r.perWithdrawalCap === null || amount <= r.perWithdrawalCap) &&
      (r.global.rollingWithdrawalBlocks !== null || r.entry?.rollingWithdrawalBlocks != null)
    )
      return null;
    // Past every observation by a window, the basis stops moving.
    const observed = [...this.observations, ...(this.accountObservations.get(account) ?? [])];
    const top = Math.max(this.tip, ...observed.map((o) => o.tip ?? 0));
    const limit = Math.max(top, this.completeFrom ?? 0) + this.history + 1;
    for (let at = this.tip; at <= limit; at++) {
      if (this.verdictAt(account, amount, at, extra).ok)
        return at > Number.MAX_SAFE_INTEGER ? null : at;
    }
    return null;
  }

  /** The window as data: the non-zero per-block sums, recomputed from the list. */
  window(account?: string) {
    const r = account === undefined ? undefined : this.resolved(account);
    const caps = r === undefined ? this.resolved('').global : r.entry;
    const blocks = caps?.rollingWithdrawalBlocks ?? null;
    const cap = caps?.rollingWithdrawalCap ?? null;
    if (account !== undefined && blocks === null) return undefined;
    const fixed = account === undefined ? this.fixedGlobal() : this.fixedEntry(account);
    const sums: Array<{ height: number; amount: bigint }> = [];
    let from: number | null = null;
    let to: number | null = null;
    if (blocks !== null && this.tip !== null) {
      from = this.tip - Number(blocks) + 1;
      to = this.tip;
      for (let h = Math.max(from, 0); h <= to; h++) {
        const amount = this.withdrawals
          .filter(
            (w) =>
              w.height === h && !w.rejected && (account === undefined || w.account === account),
          )
          .reduce((sum, w) => sum + w.amount, 0n);
        if (amount !== 0n) sums.push({ height: h, amount });
      }
    }
    const withdrawn = sums.reduce((sum, x) => sum + x.amount, 0n);
    const completeAt = this.completeAt([blocks]);
    return {
      account: account ?? null,
      tip: this.tip,
      rollingWithdrawalBlocks: blocks,
      rollingWithdrawalCap: cap,
      rollingWithdrawalCapFixed: fixed?.rollingWithdrawalCap ?? null,
      rollingWithdrawalCapShare: caps?.rollingWithdrawalCapShare ?? null,
      pegCapFixed:
        account === undefined ? this.global.pegCap : (this.entries.get(account)?.pegCap ?? null),
      peggedTotal: account === undefined ? this.pegged : (this.accountPegged.get(account) ?? 0n),
      shareBasis: this.basisOf(account),
      from,
      to,
      withdrawn,
      complete: completeAt === null && this.heldFrom === null,
      completeAt,
      heldFrom: this.heldFrom,
      availableToWithdraw:
        this.failure() !== null
          ? 0n
          : cap === null || completeAt !== null || this.heldFrom !== null
            ? null
            : maxB(cap - withdrawn, 0n),
      sums,
      nextRelease:
        sums[0] === undefined || blocks === null
          ? null
          : { height: sums[0].height + Number(blocks), amount: sums[0].amount },
      throttleModeInitiator: this.throttle,
    };
  }

  /** The mint window as data: `window`'s twin, over the mints. */
  mintWindow(account?: string) {
    const r = account === undefined ? undefined : this.resolved(account);
    const caps = r === undefined ? this.resolved('').global : r.entry;
    const blocks = caps?.rollingMintBlocks ?? null;
    const cap = caps?.rollingMintCap ?? null;
    if (account !== undefined && blocks === null) return undefined;
    const configured = account === undefined ? this.global : this.entries.get(account);
    const sums: Array<{ height: number; amount: bigint }> = [];
    let from: number | null = null;
    let to: number | null = null;
    if (blocks !== null && this.tip !== null) {
      from = this.tip - Number(blocks) + 1;
      to = this.tip;
      for (let h = Math.max(from, 0); h <= to; h++) {
        const amount = this.mints
          .filter((m) => m.height === h && (account === undefined || m.account === account))
          .reduce((sum, m) => sum + m.amount, 0n);
        if (amount !== 0n) sums.push({ height: h, amount });
      }
    }
    const minted = sums.reduce((sum, x) => sum + x.amount, 0n);
    const completeAt = this.mintCompleteAt([blocks]);
    return {
      account: account ?? null,
      tip: this.tip,
      rollingWithdrawalBlocks: blocks,
      rollingWithdrawalCap: cap,
      rollingWithdrawalCapFixed: configured?.rollingMintCap ?? null,
      rollingWithdrawalCapShare: caps?.rollingMintCapShare ?? null,
      pegCapFixed: configured?.pegCap ?? null,
      peggedTotal: account === undefined ? this.pegged : (this.accountPegged.get(account) ?? 0n),
      shareBasis: this.basisOf(account, true),
      from,
      to,
      withdrawn: minted,
      complete: completeAt === null && this.heldFrom === null,
      completeAt,
      heldFrom: this.heldFrom,
      availableToMint:
        this.failure() !== null && cap !== null
          ? 0n
          : cap === null || completeAt !== null || this.heldFrom !== null
            ? null
            : maxB(cap - minted, 0n),
      sums,
      nextRelease:
        sums[0] === undefined || blocks === null
          ? null
          : { height: sums[0].height + Number(blocks), amount: sums[0].amount },
      throttleModeInitiator: this.throttle,
    };
  }

  effective(account: string) {
    const r = this.resolved(account);
    const g = r.global;
    const e = r.entry;
    let available: bigint | null = null;
    if (g.rollingWithdrawalCap !== null)
      available = maxB(g.rollingWithdrawalCap - this.withdrawn(g.rollingWithdrawalBlocks!), 0n);
    if (e?.rollingWithdrawalCap != null) {
      const own = maxB(
        e.rollingWithdrawalCap - this.withdrawn(e.rollingWithdrawalBlocks!, account),
        0n,
      );
      available = available === null ? own : minB(available, own);
    }
    const incompleteUntil = this.completeAt([
      g.rollingWithdrawalBlocks,
      e?.rollingWithdrawalBlocks ?? null,
    ]);
    return {
      pegCap: r.pegCap,
      accountPegCap: r.accountPegCap,
      perDepositCap: r.perDepositCap,
      perDepositMinimum: r.perDepositMinimum,
      perWithdrawalCap: r.perWithdrawalCap,
      rollingWithdrawalBlocks: g.rollingWithdrawalBlocks,
      rollingWithdrawalCap: g.rollingWithdrawalCap,
      accountRollingWithdrawalBlocks: e ? e.rollingWithdrawalBlocks : null,
      accountRollingWithdrawalCap: e ? e.rollingWithdrawalCap : null,
      rollingWithdrawalCapShare: g.rollingWithdrawalCapShare,
      accountRollingWithdrawalCapShare: e ? e.rollingWithdrawalCapShare : null,
      account,
      hasEntry: this.entries.has(account),
      availableToWithdraw:
        this.failure() !== null
          ? 0n
          : incompleteUntil === null && this.heldFrom === null
            ? available
            : null,
      incompleteUntil,
      heldFrom: this.heldFrom,
      rollingWithdrawalCapFixed: this.fixedGlobal().rollingWithdrawalCap,
      accountRollingWithdrawalCapFixed: this.fixedEntry(account)?.rollingWithdrawalCap ?? null,
      peggedTotal: this.pegged,
      accountPeggedTotal: this.accountPegged.get(account) ?? 0n,
      shareBasis: this.basisOf(undefined),
      accountShareBasis: this.basisOf(account),
      throttleModeInitiator: this.throttle,
      rollingMintBlocks: g.rollingMintBlocks,
      rollingMintCap: g.rollingMintCap,
      rollingMintCapShare: g.rollingMintCapShare,
      accountRollingMintBlocks: e ? e.rollingMintBlocks : null,
      accountRollingMintCap: e ? e.rollingMintCap : null,
      accountRollingMintCapShare: e ? e.rollingMintCapShare : null,
      availableToMint: this.mintRoomOf(account),
      mintIncompleteUntil: this.mintCompleteAt([g.rollingMintBlocks, e?.rollingMintBlocks ?? null]),
      rollingMintCapFixed: this.global.rollingMintCap,
      accountRollingMintCapFixed: this.entries.get(account)?.rollingMintCap ?? null,
      mintShareBasis: this.basisOf(undefined, true),
      accountMintShareBasis: this.basisOf(account, true),
    } satisfies Mutable<Record<string, unknown>>;
  }

  // The least room of the mint windows that apply to `account` (null: none, or unknown).
  private mintRoomOf(account: string): bigint | null {
    const r = this.resolved(account);
    const rooms = [this.mintRoom(r.global), this.mintRoom(r.entry, account)];
    const set = [r.global.rollingMintBlocks, r.entry?.rollingMintBlocks ?? null];
    if (set.every((b) => b === null)) return null;
    if (this.failure() !== null) return 0n;
    let room: bigint | null = null;
    for (const [i, x] of rooms.entries()) {
      if (set[i] === null) continue;
      if (x === null) return null;
      room = room === null ? x : minB(room, x);
    }
    return room;
  }

  // The basis a window's share applies to now: the global one, or an account entry's own
  // (over the mint window's length with `mint`).
  private basisOf(account: string | undefined, mint = false): bigint {
    const field = mint ? 'rollingMintBlocks' : 'rollingWithdrawalBlocks';
    if (account === undefined) {
      const blocks = this.global[field];
      return blocks === null ? this.pegged : naiveBasis(this.observations, this.tip, blocks);
    }
    const blocks = this.entries.get(account)?.[field] ?? null;
    return blocks === null
      ? (this.accountPegged.get(account) ?? 0n)
      : naiveBasis(this.accountObservations.get(account) ?? [], this.tip, blocks);
  }
}

/**
 * The basis of a window of `blocks` at tip `tip`, as the rule says it and no cleverer: the
 * lowest of the totals applied at a tip ≥ tip − blocks + 1 and of the last one applied at a
 * lower tip (or before any block); nothing observed is 0.
 */
export function naiveBasis(
  observations: ReadonlyArray<{ tip: number | null; total: bigint }>,
  tip: number | null,
  blocks: bigint,
): bigint {
  if (observations.length === 0) return 0n;
  const from = tip === null ? Number.POSITIVE_INFINITY : tip - Number(blocks) + 1;
  const counted = observations.filter((o) => o.tip !== null && o.tip >= from);
  const before = observations.filter((o) => o.tip === null || o.tip < from);
  const last = before[before.length - 1];
  if (last !== undefined) counted.push(last);
  return counted.reduce((m, o) => minB(o.total, m), counted[0]!.total);
}

const CAP_KEYS = [
  'perWithdrawalCap',
  'perDepositCap',
  'pegCap',
  'accountPegCap',
  'rollingWithdrawalCap',
  'accountRollingWithdrawalCap',
  'rollingWithdrawalCapShare',
  'accountRollingWithdrawalCapShare',
  'rollingMintCap',
  'accountRollingMintCap',
  'rollingMintCapShare',
  'accountRollingMintCapShare',
] as const;
const FLOOR_KEYS = [
  'rollingWithdrawalBlocks',
  'accountRollingWithdrawalBlocks',
  'perDepositMinimum',
  'rollingMintBlocks',
  'accountRollingMintBlocks',
] as const;

// Everything an account's checks read of its caps, resolved, with or without the overlay:
// the fixed caps and the shares as set (what a change sets; the total is chain traffic).
function naiveResolved(m: NaiveModel, account: string | undefined, overlay: boolean) {
  const saved = m.throttle;
  if (!overlay) m.throttle = null;
  const g = m.fixedGlobal();
  const e = account === undefined ? undefined : m.fixedEntry(account);
  m.throttle = saved;
  return {
    perWithdrawalCap: e?.perWithdrawalCap ?? g.perWithdrawalCap,
    perDepositCap: e?.perDepositCap ?? g.perDepositCap,
    perDepositMinimum: e ? e.perDepositMinimum : g.perDepositMinimum,
    pegCap: g.pegCap,
    accountPegCap: e ? e.pegCap : null,
    rollingWithdrawalBlocks: g.rollingWithdrawalBlocks,
    rollingWithdrawalCap: g.rollingWithdrawalCap,
    accountRollingWithdrawalBlocks: e ? e.rollingWithdrawalBlocks : null,
    accountRollingWithdrawalCap: e ? e.rollingWithdrawalCap : null,
    rollingWithdrawalCapShare: g.rollingWithdrawalCapShare,
    accountRollingWithdrawalCapShare: e ? e.rollingWithdrawalCapShare : null,
    rollingMintBlocks: g.rollingMintBlocks,
    rollingMintCap: g.rollingMintCap,
    rollingMintCapShare: g.rollingMintCapShare,
    accountRollingMintBlocks: e ? e.rollingMintBlocks : null,
    accountRollingMintCap: e ? e.rollingMintCap : null,
    accountRollingMintCapShare: e ? e.rollingMintCapShare : null,
  };
}

/**
 * The definition of a loosening, recomputed the slow way: every field of the global caps and
 * of every account with an entry before or after, compared in both views (what checks see,
 * and what is configured beneath the throttle overlay), and throttle mode and every key.
 */
export function naiveLoosens(before: NaiveModel, after: NaiveModel): boolean {
  if (before.throttle !== null && after.throttle === null) return true;
  // The check of the peg's backing lets more through, or its breaker is cleared.
  if (before.tripped !== null && after.tripped === null) return true;
  if (
    before.maxUnbacked !== null &&
    (after.maxUnbacked === null ||
      after.maxUnbacked > before.maxUnbacked ||
      after.reservesMaxAge > before.reservesMaxAge)
  )
    return true;
  for (const [name, key] of after.keys)
    if (key.revoked && before.keys.get(name)?.revoked === false) return true;
  // The mint history's start lowered: a mint window reports its room sooner.
  if (
    before.mintCompleteFrom !== null &&
    (after.mintCompleteFrom === null || after.mintCompleteFrom < before.mintCompleteFrom)
  )
    return true;
  const accounts = [undefined, ...new Set([...before.entries.keys(), ...after.entries.keys()])];
  for (const account of accounts) {
    for (const overlay of [true, false]) {
      const b = naiveResolved(before, account, overlay);
      const a = naiveResolved(after, account, overlay);
      for (const k of CAP_KEYS) {
        const was = b[k];
        const now = a[k];
        if (was !== null && (now === null || now > was)) return true;
      }
      for (const k of FLOOR_KEYS) {
        const was = b[k];
        const now = a[k];
        if (was !== null && (now === null || now < was)) return true;
      }
    }
  }
  return false;
}
