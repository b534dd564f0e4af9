/**
 * The state's shape: the public value types, the opaque `LimitsState` and its fields, and
 * the private draft an `apply`/`applyAll` works on. A draft's persistent structures are
 * updated with a fresh owner token, so nodes made during one call may be changed in place
 * while every earlier state stays untouched.
 */
import type { Amount } from './amount.js';
import type { Height, PendingChange, SettledChange } from './events.js';
import type { Caps } from './limits.js';
import { type Owner, ownerToken, type PMap } from './pmap.js';
import type { SumNode, TreeShape } from './sum-tree.js';

export type { Height } from './events.js';

/**
 * The caps that throttle mode imposes. Defaults are those of the sBTC bridge:
 * 1.5 BTC per withdrawal, at most 2 BTC in any 18 blocks.
 */
export interface ThrottleProfile {
  readonly perWithdrawalCap: Amount;
  readonly rollingWithdrawalBlocks: Amount;
  readonly rollingWithdrawalCap: Amount;
}

/** A registered throttle key: its name, the salted hash of its secret, whether revoked. */
export interface ThrottleKey {
  readonly name: string;
  readonly secretHash: string;
  readonly revoked: boolean;
}

/** A withdrawal the state holds (one requested inside the retained history). */
export interface Withdrawal {
  readonly id: string;
  readonly account: string;
  readonly amount: Amount;
  readonly height: Height;
  readonly rejected: boolean;
}

/** A mint the state holds (`depositMinted`, at a height inside the retained history). */
interface Mint {
  readonly id: string;
  readonly account: string;
  readonly amount: Amount;
  readonly height: Height;
}

declare const opaque: unique symbol;

/**
 * The state of the limits: configuration, chain tip, retained withdrawals, throttle mode.
 * An immutable, opaque value: only {@link createLimitsState}, {@link apply},
 * {@link applyAll} and `stateFromSnapshot` make one; read it through the views
 * (`getLimits`, `effectiveLimits`, `windowOf`, …) and `snapshotOf`.
 */
export interface LimitsState {
  /** @internal How many heights of per-block data are kept, up to the highest tip seen. */
  readonly historyBlocks: number;
  /** @internal The current tip, or `null` before any block is known. */
  readonly tip: Height | null;
  /** @internal The highest tip ever seen (a reorg lowers `tip`, not this). */
  readonly highestTip: Height | null;
  /** @internal The configured global caps (without the throttle overlay). */
  readonly limits: Caps;
  /** @internal The configured account entries (without the throttle overlay). */
  readonly entries: PMap<Caps>;
  /**
   * @internal The height from which every withdrawal is known (`historyCompleteFrom`), or
   * `null` when the history is complete (fed from the start).
   */
  readonly completeFrom: Height | null;
  /**
   * @internal The burn height of the first block a feed holds past the chain bounds
   * (`blocksHeld`), or `null` when none is held: while one is, the chain has moved past what
   * the state shows, and every window reports no room.
   */
  readonly heldFrom: Height | null;
  /** @internal The global pegged-in total last observed. */
  readonly peggedTotal: Amount;
  /** @internal The caps throttle mode imposes. */
  readonly throttleProfile: ThrottleProfile;
  /** @internal The name of the key that started throttle mode, or `null` when it is not active. */
  readonly throttleModeInitiator: string | null;
  /** @internal The throttle key registry. */
  readonly throttleKeys: PMap<ThrottleKey>;
  /** @internal The ring of per-block sums of all accounts, with the ids listed per height. */
  readonly treeShape: TreeShape;
  /** @internal */
  readonly historySums: SumNode;
  /**
   * @internal The withdrawals held, by id, in generations, youngest first: a generation takes
   * the withdrawals requested while it is the youngest, and is dropped whole once all of them
   * are older than the history. Entries older than the history may linger until then; every
   * lookup ignores them.
   */
  readonly generations: ReadonlyArray<Generation>;
  /** @internal The own per-block sums of each account whose entry sets its own window. */
  readonly books: PMap<Book>;
  /** @internal The ring of per-block sums of every mint, with the ids listed per height. */
  readonly mintSums: SumNode;
  /** @internal The mints held (inside the retained history), by id. */
  readonly mints: PMap<Mint>;
  /** @internal The own per-block mint sums of each account whose entry sets its own mint window. */
  readonly mintBooks: PMap<Book>;
  /**
   * @internal The height from which every mint is known (`mintHistoryCompleteFrom`), or
   * `null` when the mint history is complete (fed from the start).
   */
  readonly mintCompleteFrom: Height | null;
  /** @internal Each account's pegged-in total last observed (absent = 0). */
  readonly accountPegged: PMap<Amount>;
  /**
   * @internal Each global pegged total observed, with the tip it was applied at, in the order
   * applied (the lagged basis of a window cap's share reads them); the oldest that no window
   * can reach again are left out.
   */
  readonly totals: ReadonlyArray<Observation>;
  /** @internal The same for each account's pegged total (an account never observed: absent). */
  readonly accountTotals: PMap<ReadonlyArray<Observation>>;
  /** @internal The reserves last observed (`reservesObserved`), or `null` before any. */
  readonly reserves: ReservesReading | null;
  /** @internal The check of the peg's backing (`pegIntegritySet`); off by default. */
  readonly integrity: IntegrityPolicy;
  /** @internal Where the breaker tripped, or `null` while it has not (or was cleared). */
  readonly tripped: Tripped | null;
  /** @internal The pending changes, oldest (lowest id) first. */
  readonly changes: ReadonlyArray<PendingChange>;
  /** @internal The id the next pending change gets. */
  readonly nextChangeId: number;
  /** What makes the type opaque: no value made elsewhere is a state. */
  readonly [opaque]: 'LimitsState';
}

/** A pegged total as observed, and the tip when it was applied (`null` before any block). */
export interface Observation {
  readonly tip: Height | null;
  readonly total: Amount;
}

/** The reserves that back the peg, as read from the base chain at burn height `height`. */
export interface ReservesReading {
  readonly total: Amount;
  readonly height: Height;
}

/**
 * The check of the peg's backing: the peg is unbacked when the pegged total exceeds the
 * reserves by more than `maxUnbacked` (`null`: no check); reserves read more than
 * `reservesMaxAge` blocks below the tip are unknown.
 */
export interface IntegrityPolicy {
  readonly maxUnbacked: Amount | null;
  readonly reservesMaxAge: number;
}

/** Where the breaker tripped: the tip (`null` before any block), and the figures then. */
export interface Tripped {
  readonly height: Height | null;
  readonly peggedTotal: Amount;
  readonly reserves: Amount;
  readonly unbacked: Amount;
}

/** @internal A generation of withdrawals (see {@link LimitsState.generations}). */
export interface Generation {
  readonly map: PMap<Withdrawal>;
  /** The highest tip when it became the youngest (null before the first block). */
  readonly opened: Height | null;
  /** The highest tip when a younger one took over; null for the youngest. */
  readonly sealed: Height | null;
  /**
   * A Bloom filter of the ids of a sealed generation, built when it is sealed (it takes no
   * new ids after that), so that looking up an id it does not hold costs a few bit tests
   * instead of a map lookup. `undefined` for the youngest.
   */
  readonly filter: Uint32Array | undefined;
  /** The hashes of the ids {@link filter} was built from; `undefined` for the youngest. */
  readonly hashes: Uint32Array | undefined;
  /**
   * On the youngest only: a Bloom filter of the ids of every sealed generation, so that an
   * id none of them holds (every new withdrawal) costs one bit test instead of one per
   * sealed generation. Built at the end of the call that sealed the newest of them (until
   * then `undefined`, and each is tested alone); a generation dropped since leaves its ids
   * in it, which costs only false positives.
   */
  readonly older: Uint32Array | undefined;
}

/**
 * @internal An account's own per-block sums. Heights that leave the history are not cleared
 * when they leave: `upTo` says up to which highest tip the tree is clean, and whoever reads
 * or changes it clears the heights that left since (a range clear, O(log H)).
 */
export interface Book {
  tree: SumNode;
  upTo: Height | null;
  owner: Owner | undefined;
}

// The fields of a state, which only this module turns into one (a state is opaque).
type StateFields = Omit<LimitsState, typeof opaque>;

/** The fields as a state: the one place a draft becomes a {@link LimitsState}. */
export function asState(fields: StateFields): LimitsState {
  return fields as LimitsState;
}

/** The mutable working copy one `apply`/`applyAll` call changes; never escapes. */
export type Draft = { -readonly [K in keyof StateFields]: StateFields[K] } & {
  /** Whether `generations` is this call's own copy yet (made on the first change). */
  gensOwned: boolean;
  /** Whether `totals` is this call's own copy yet (made on the first observation). */
  totalsOwned: boolean;
  /**
   * The withdrawals added, changed or removed (REMOVED) during this call, written into the
   * generations once at the end: a withdrawal added and forgotten within one batch never
   * touches them, and lookups cost a hash-table probe. Made on the first write.
   */
  pending: Map<string, Withdrawal | typeof REMOVED> | undefined;
  /**
   * The generation that holds each persisted withdrawal this call changed or removed, by
   * the tip it was opened at: the one thing about a generation that sealing it (a new
   * object) does not change.
   */
  openedAtOf: Map<string, Height> | undefined;
  /** Generations this call made (no other state shares them): new withdrawals may go there. */
  ownGenerations: Set<Generation> | undefined;
  /** Books looked up or changed during this call (NO_BOOK: none; DROPPED_BOOK: removed). */
  bookCache: Map<string, Book | typeof NO_BOOK | typeof DROPPED_BOOK> | undefined;
  /** The same for the mint books. */
  mintBookCache: Map<string, Book | typeof NO_BOOK | typeof DROPPED_BOOK> | undefined;
  /** What became of pending changes during this call, in order (made on the first). */
  settled: SettledChange[] | undefined;
  owner: Owner;
  changed: boolean;
};

/** A withdrawal removed during this call, in the draft's `pending`. */
export const REMOVED = Symbol('removed');

/** In the draft's `bookCache`: the account has no book of its own. */
export const NO_BOOK = Symbol('no book');

/** In the draft's `bookCache`: the account's book was removed during this call. */
export const DROPPED_BOOK = Symbol('dropped book');

// What a state holds in the slots a draft keeps its bookkeeping in: no owner token any node
// carries, so nothing is ever changed in place through it.
const FROZEN: Owner = ownerToken(false);

/**
 * A copy of every field of a state, with a draft's bookkeeping empty: the one place that
 * lists the fields, so a field added to {@link LimitsState} and not here does not compile.
 * States and drafts are both made here, so they share one object shape, which keeps every
 * field access of the rules monomorphic. Written out field by field: a spread is several
 * times slower here, and this runs on every `apply`.
 */
function copyOf(s: StateFields, owner: Owner): Draft {
  return {
    historyBlocks: s.historyBlocks,
    tip: s.tip,
    highestTip: s.highestTip,
    limits: s.limits,
    entries: s.entries,
    completeFrom: s.completeFrom,
    heldFrom: s.heldFrom,
    peggedTotal: s.peggedTotal,
    throttleProfile: s.throttleProfile,
    throttleModeInitiator: s.throttleModeInitiator,
    throttleKeys: s.throttleKeys,
    treeShape: s.treeShape,
    historySums: s.historySums,
    generations: s.generations,
    books: s.books,
    mintSums: s.mintSums,
    mints: s.mints,
    mintBooks: s.mintBooks,
    mintCompleteFrom: s.mintCompleteFrom,
    accountPegged: s.accountPegged,
    totals: s.totals,
    accountTotals: s.accountTotals,
    reserves: s.reserves,
    integrity: s.integrity,
    tripped: s.tripped,
    changes: s.changes,
    nextChangeId: s.nextChangeId,
    gensOwned: false,
    totalsOwned: false,
    pending: undefined,
    openedAtOf: undefined,
    ownGenerations: undefined,
    bookCache: undefined,
    mintBookCache: undefined,
    settled: undefined,
    owner,
    changed: false,
  };
}

/** The fields of a state, copied (the draft's bookkeeping left empty). */
export function stateFieldsOf(s: StateFields): StateFields {
  return copyOf(s, FROZEN);
}

/** A draft of `state`: its fields, and this call's own bookkeeping, empty. */
export function draftOf(state: LimitsState, single = false): Draft {
  return copyOf(state, ownerToken(single));
}

/** The oldest height whose data the state still holds (0 before the history fills up). @internal */
export function oldestRetained(s: Pick<LimitsState, 'highestTip' | 'historyBlocks'>): Height {
  return s.highestTip === null ? 0 : Math.max(0, s.highestTip - s.historyBlocks + 1);
}
