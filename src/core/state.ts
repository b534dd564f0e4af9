/**
 * The state and its events: `createLimitsState`, `apply`, `applyAll` (SPEC §2).
 *
 * A state is an immutable value. Every event handler works on a private draft whose
 * persistent structures are updated with a fresh owner token, so nodes made during one
 * `apply`/`applyAll` may be changed in place while every earlier state stays untouched.
 */
import { type Amount, requireCap, requirePositive } from './amount.js';
import { describe, fail, joinPath, LimitsError } from './errors.js';
import { isSecretHash } from './keys.js';
import {
  accountCapsEntries,
  type Caps,
  type CapsInput,
  checkCaps,
  isEmptyCaps,
  isRecord,
  type LimitsConfig,
  MAX_NAME_LENGTH,
  NO_CAPS,
  rejectUnknownFields,
  requireAccount,
  requireName,
  validateCaps,
} from './limits.js';
import {
  emptyMap,
  hashOf,
  mapDelete,
  mapForEach,
  mapGet,
  mapSet,
  type Owner,
  type PMap,
} from './pmap.js';
import { addAt, clearHeights, type Ring, ringOf, type SumNode, visitHeights } from './ring.js';

/** Block height: a non-negative safe integer. */
export type Height = number;

/**
 * The caps that throttle mode imposes (SPEC §3). Defaults are those of the sBTC bridge:
 * 1.5 BTC per withdrawal, at most 2 BTC in any 18 blocks.
 */
export interface ThrottleProfile {
  readonly perWithdrawalCap: Amount;
  readonly rollingWithdrawalBlocks: Amount;
  readonly rollingWithdrawalCap: Amount;
}

/** The default throttle profile. */
export const DEFAULT_THROTTLE_PROFILE: ThrottleProfile = {
  perWithdrawalCap: 150_000_000n,
  rollingWithdrawalBlocks: 18n,
  rollingWithdrawalCap: 200_000_000n,
};

/** The default number of blocks of retained history (two weeks of Bitcoin blocks). */
export const DEFAULT_HISTORY_BLOCKS = 2016;

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
  /** @internal The global pegged-in total last observed. */
  readonly peggedTotal: Amount;
  /** @internal The caps throttle mode imposes. */
  readonly throttleProfile: ThrottleProfile;
  /** @internal The name of the key that started throttle mode, or `null` when it is not active. */
  readonly throttleInitiator: string | null;
  /** @internal The throttle key registry. */
  readonly throttleKeys: PMap<ThrottleKey>;
  /** @internal The ring of per-block sums of all accounts, with the ids listed per height. */
  readonly ring: Ring;
  /** @internal */
  readonly window: SumNode;
  /**
   * @internal The withdrawals held, by id, in generations, youngest first: a generation takes
   * the withdrawals requested while it is the youngest, and is dropped whole once all of them
   * are older than the history. Entries older than the history may linger until then; every
   * lookup ignores them.
   */
  readonly generations: ReadonlyArray<Generation>;
  /** @internal The own per-block sums of each account whose entry sets its own window. */
  readonly books: PMap<Book>;
  /** @internal Each account's pegged-in total last observed (absent = 0). */
  readonly accountPegged: PMap<Amount>;
  /** What makes the type opaque: no value made elsewhere is a state. */
  readonly [opaque]: 'LimitsState';
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
  /**
   * The youngest generation's log of the hashes of the ids it took, appended as they are
   * written (when they are hot in cache), so that sealing builds the filter from one compact
   * array instead of walking the map. The log is shared along one line of states: this
   * version's hashes are its first `logged` ones, and only the version at the log's end may
   * append. A state derived from an older version (a branch) gives the log up
   * (`undefined`), and its filter is built from its map when it is sealed.
   */
  readonly log: HashLog | undefined;
  readonly logged: number;
}

/** @internal An append-only, growable array of key hashes. */
export interface HashLog {
  hashes: Uint32Array;
  n: number;
}

function newLog(): HashLog {
  return { hashes: new Uint32Array(64), n: 0 };
}

function logHash(log: HashLog, hash: number): void {
  if (log.n === log.hashes.length) {
    const bigger = new Uint32Array(log.n * 2);
    bigger.set(log.hashes);
    log.hashes = bigger;
  }
  log.hashes[log.n++] = hash;
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

/** Every event of SPEC §2. Amounts are bigint, heights are numbers. */
export type LimitsEvent =
  | { readonly type: 'limitsSet'; readonly limits: LimitsConfig }
  | { readonly type: 'accountLimitsSet'; readonly account: string; readonly limits: CapsInput }
  | { readonly type: 'blockConnected'; readonly height: Height }
  | { readonly type: 'chainReorganized'; readonly height: Height }
  | {
      readonly type: 'withdrawalRequested';
      readonly id: string;
      readonly account: string;
      readonly amount: Amount;
      readonly height: Height;
    }
  | { readonly type: 'withdrawalRejected'; readonly id: string }
  | {
      readonly type: 'peggedTotalObserved';
      readonly total: Amount;
      readonly account?: string | undefined;
    }
  | { readonly type: 'throttleKeyAdded'; readonly name: string; readonly secretHash: string }
  | { readonly type: 'throttleKeyRevoked'; readonly name: string }
  | { readonly type: 'throttleKeyReactivated'; readonly name: string }
  | { readonly type: 'throttleStarted'; readonly initiator: string }
  | { readonly type: 'throttleEnded' };

/** The result of {@link apply} and {@link applyAll}. */
export type ApplyResult =
  | { readonly ok: true; readonly state: LimitsState }
  | { readonly ok: false; readonly error: LimitsError };

/** Options of {@link createLimitsState}. */
export interface LimitsOptions {
  /** The initial caps and account entries (all unset when absent). */
  readonly limits?: LimitsConfig | undefined;
  /** Heights of per-block data kept (default 2016); every window must fit. */
  readonly historyBlocks?: number | undefined;
  /** The caps throttle mode imposes (default: the sBTC bridge's). */
  readonly throttleProfile?: ThrottleProfile | undefined;
}

/** The mutable working copy one `apply`/`applyAll` call changes; never escapes. */
// The fields of a state, which only this module turns into one (a state is opaque).
type StateFields = Omit<LimitsState, typeof opaque>;

function asState(fields: StateFields): LimitsState {
  return fields as LimitsState;
}

type Draft = { -readonly [K in keyof StateFields]: StateFields[K] } & {
  /** Whether `generations` is this call's own copy yet (made on the first change). */
  gensOwned: boolean;
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
  homes: Map<string, Height> | undefined;
  /** Generations this call made (no other state shares them): new withdrawals may go there. */
  fresh: Set<Generation> | undefined;
  /** Books looked up or changed during this call (NO_BOOK: none; DROPPED_BOOK: removed). */
  bookCache: Map<string, Book | typeof NO_BOOK | typeof DROPPED_BOOK> | undefined;
  owner: Owner;
  changed: boolean;
};

/** How many generations the history is split into: at most 1/GENERATIONS of it lingers. */
const GENERATIONS = 8;

function requireHeight(value: unknown, path: string): Height {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    fail(
      'invalid_height',
      `expected a block height (a non-negative safe integer), got ${describe(value)}`,
      path,
    );
  }
  return value;
}

function requireId(value: unknown, path: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_NAME_LENGTH) {
    fail(
      'invalid_withdrawal_id',
      `expected a withdrawal id of 1 to ${MAX_NAME_LENGTH} characters, got ${describe(value)}`,
      path,
    );
  }
  return value;
}

/** Validates a throttle profile against the history (SPEC §3). Throws a LimitsError. */
function validateProfile(value: unknown, historyBlocks: number, path: string): ThrottleProfile {
  if (!isRecord(value))
    fail('invalid_option', `expected a throttle profile object, got ${describe(value)}`, path);
  rejectUnknownFields(
    value,
    ['perWithdrawalCap', 'rollingWithdrawalBlocks', 'rollingWithdrawalCap'],
    path,
  );
  const profile: ThrottleProfile = {
    perWithdrawalCap: requireCap(value.perWithdrawalCap, joinPath(path, 'perWithdrawalCap')),
    rollingWithdrawalBlocks: requireCap(
      value.rollingWithdrawalBlocks,
      joinPath(path, 'rollingWithdrawalBlocks'),
    ),
    rollingWithdrawalCap: requireCap(
      value.rollingWithdrawalCap,
      joinPath(path, 'rollingWithdrawalCap'),
    ),
  };
  checkCaps({ ...NO_CAPS, ...profile }, path, historyBlocks);
  return profile;
}

/**
 * Creates a state: no block known, nothing withdrawn, throttle mode off, no keys.
 *
 * @throws LimitsError with code `invalid_option` (or the code of the failing cap rule)
 *   when the options break the spec; this is a set-up error, not data
 * @example
 * ```ts
 * const state = createLimitsState({
 *   limits: { rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: 10_00000000n },
 * });
 * getLimits(state).availableToWithdraw; // 1000000000n
 * ```
 */
export function createLimitsState(options: LimitsOptions = {}): LimitsState {
  if (!isRecord(options as unknown))
    throw new LimitsError(
      'invalid_option',
      `options: expected an object, got ${describe(options)}`,
    );
  const historyBlocks = options.historyBlocks ?? DEFAULT_HISTORY_BLOCKS;
  if (!Number.isSafeInteger(historyBlocks) || historyBlocks < 1 || historyBlocks > 1_000_000) {
    throw new LimitsError(
      'invalid_option',
      `historyBlocks: expected an integer from 1 to 1000000, got ${describe(historyBlocks)}`,
      'historyBlocks',
    );
  }
  const ring = ringOf(historyBlocks);
  const base = asState({
    historyBlocks,
    tip: null,
    highestTip: null,
    limits: NO_CAPS,
    entries: emptyMap(),
    peggedTotal: 0n,
    throttleProfile: DEFAULT_THROTTLE_PROFILE,
    throttleInitiator: null,
    throttleKeys: emptyMap(),
    ring,
    window: ring.empty,
    generations: [
      {
        map: emptyMap(),
        opened: null,
        sealed: null,
        filter: undefined,
        log: newLog(),
        logged: 0,
      },
    ],
    books: emptyMap(),
    accountPegged: emptyMap(),
  });
  const draft = draftOf(base);
  try {
    if (options.throttleProfile !== undefined) {
      draft.throttleProfile = validateProfile(
        options.throttleProfile,
        historyBlocks,
        'throttleProfile',
      );
    } else {
      validateProfile(DEFAULT_THROTTLE_PROFILE, historyBlocks, 'throttleProfile');
    }
    if (options.limits !== undefined) setLimits(draft, options.limits, 'limits');
  } catch (e) {
    throw e instanceof LimitsError && e.code === 'invalid_event'
      ? new LimitsError('invalid_option', e.message, e.path)
      : e;
  }
  return freeze(draft);
}

const REMOVED = Symbol('removed');

// A fresh owner token; every token has the same shape, so reading `single` stays monomorphic.
function ownerToken(single: boolean): Owner {
  return { single };
}
const NO_BOOK = Symbol('no book');
const DROPPED_BOOK = Symbol('dropped book');

// Written out field by field: a spread with extra fields is several times slower here.
function draftOf(state: LimitsState, single = false): Draft {
  return {
    historyBlocks: state.historyBlocks,
    tip: state.tip,
    highestTip: state.highestTip,
    limits: state.limits,
    entries: state.entries,
    peggedTotal: state.peggedTotal,
    throttleProfile: state.throttleProfile,
    throttleInitiator: state.throttleInitiator,
    throttleKeys: state.throttleKeys,
    ring: state.ring,
    window: state.window,
    generations: state.generations,
    books: state.books,
    accountPegged: state.accountPegged,
    gensOwned: false,
    pending: undefined,
    homes: undefined,
    fresh: undefined,
    bookCache: undefined,
    owner: ownerToken(single),
    changed: false,
  };
}

// Where the last successful findWithdrawal found its withdrawal: the generation holding it
// (by the tip it was opened at),
// or undefined when it was in the draft's pending map. Lookups never re-enter, so a
// module-level slot saves an allocation per lookup.
let foundHome: Height | undefined;

// A blocked Bloom filter: each id sets three bits in one 32-bit word, so a lookup costs one
// memory load per sealed generation. The word comes from the low bits of the id's hash, the
// three bits from other bits of a second hash. About 16 bits an id: ~1.5% false positives.
function filterWord(hash: number, mask: number): number {
  return hash & mask;
}

function filterBits(hash: number): number {
  const h = Math.imul(hash ^ (hash >>> 16), 0x45d9f3b);
  return (1 << (h & 31)) | (1 << ((h >>> 5) & 31)) | (1 << ((h >>> 10) & 31));
}

function filterOf(gen: Generation): Uint32Array {
  if (gen.log !== undefined) return filterOfHashes(gen.log.hashes, gen.logged);
  return filterOfHashes(Uint32Array.from(mapKeysHashed(gen.map)), gen.map.size);
}

function mapKeysHashed(map: PMap<Withdrawal>): number[] {
  const out: number[] = [];
  mapForEach(map, (_, id) => out.push(hashOf(id)));
  return out;
}

function filterOfHashes(hashes: ArrayLike<number>, n: number): Uint32Array {
  let words = 2;
  while (words * 32 < n * 16) words *= 2;
  const filter = new Uint32Array(words);
  const mask = words - 1;
  for (let k = 0; k < n; k++) {
    const h = hashes[k]!;
    filter[filterWord(h, mask)]! |= filterBits(h);
  }
  return filter;
}

function mayHold(filter: Uint32Array, hash: number): boolean {
  const bits = filterBits(hash);
  return (filter[filterWord(hash, filter.length - 1)]! & bits) === bits;
}

/** A withdrawal the draft holds (inside the history), or undefined; sets `foundHome`. */
function findWithdrawal(d: Draft, id: string): Withdrawal | undefined {
  const oldest = oldestRetained(d);
  const p = d.pending?.get(id);
  if (p !== undefined) {
    // Ids are unique among the withdrawals held, so a pending entry decides.
    foundHome = undefined;
    return p === REMOVED || p.height < oldest ? undefined : p;
  }
  const gens = d.generations;
  let hash = -1;
  for (let i = 0; i < gens.length; i++) {
    const gen = gens[i]!;
    if (gen.map.size === 0) continue;
    if (hash < 0) hash = hashOf(id);
    if (gen.filter !== undefined && !mayHold(gen.filter, hash)) continue;
    const w = mapGet(gen.map, id, hash);
    if (w !== undefined && w.height >= oldest) {
      foundHome = gen.opened ?? undefined;
      return w;
    }
  }
  return undefined;
}

function pendingOf(d: Draft): Map<string, Withdrawal | typeof REMOVED> {
  d.pending ??= new Map();
  return d.pending;
}

// Records a change to the withdrawal findWithdrawal found last.
function changeFound(d: Draft, id: string, w: Withdrawal | typeof REMOVED): void {
  const home = foundHome;
  if (home !== undefined) {
    d.homes ??= new Map();
    d.homes.set(id, home);
    pendingOf(d).set(id, w);
  } else if (w === REMOVED && d.homes?.get(id) === undefined) {
    // Added during this call and never persisted: nothing to remove but the entry.
    d.pending!.delete(id);
  } else pendingOf(d).set(id, w);
}

function ownGens(d: Draft): Generation[] {
  if (!d.gensOwned) {
    d.generations = d.generations.slice();
    d.gensOwned = true;
  }
  return d.generations as Generation[];
}

/** Calls `fn` with every withdrawal the draft holds inside the history. */
function forEachHeld(d: Draft, fn: (w: Withdrawal) => void): void {
  const oldest = oldestRetained(d);
  const p = d.pending;
  if (p !== undefined) for (const w of p.values()) if (w !== REMOVED && w.height >= oldest) fn(w);
  for (const gen of d.generations) {
    mapForEach(gen.map, (w, id) => {
      if (w.height >= oldest && (p === undefined || !p.has(id))) fn(w);
    });
  }
}

/**
 * Calls `fn` with every withdrawal `state` holds (requested inside the retained history,
 * not dropped by a reorganization), in no particular order. @internal
 */
export function forEachWithdrawal(state: LimitsState, fn: (w: Withdrawal) => void): void {
  const oldest = oldestRetained(state);
  for (const gen of state.generations) {
    mapForEach(gen.map, (w) => {
      if (w.height >= oldest) fn(w);
    });
  }
}

// Heights that left the history since the book was last clean are cleared from its tree.
function cleanTree(
  s: Pick<LimitsState, 'ring' | 'historyBlocks' | 'highestTip'>,
  book: Book,
  owner: Owner,
): SumNode {
  const { upTo } = book;
  const highest = s.highestTip;
  if (upTo === null || highest === null || upTo === highest) return book.tree;
  // A reorganization never lowers the highest tip: only heights below it have left.
  if (highest - s.historyBlocks >= upTo) return s.ring.empty;
  return clearHeights(
    s.ring,
    book.tree,
    Math.max(0, upTo - s.historyBlocks + 1),
    highest - s.historyBlocks,
    owner,
  );
}

/** The per-block sums of an account's book, with the heights that left the history cleared. @internal */
export function bookTree(state: LimitsState, book: Book): SumNode {
  return cleanTree(state, book, { single: true });
}

function bookOf(d: Draft, account: string): Book | undefined {
  d.bookCache ??= new Map();
  let b = d.bookCache.get(account);
  if (b === undefined) {
    b = mapGet(d.books, account) ?? NO_BOOK;
    d.bookCache.set(account, b);
  }
  return b === NO_BOOK || b === DROPPED_BOOK ? undefined : b;
}

// A book this call owns, clean up to the draft's highest tip.
function ownBook(d: Draft, account: string, book: Book): Book {
  if (book.owner === d.owner && book.upTo === d.highestTip) return book;
  const tree = cleanTree(d, book, d.owner);
  if (book.owner === d.owner) {
    book.tree = tree;
    book.upTo = d.highestTip;
    return book;
  }
  const owned: Book = { tree, upTo: d.highestTip, owner: d.owner };
  d.bookCache!.set(account, owned);
  return owned;
}

// Writes the pending withdrawals into the generations: new ones into the youngest (its
// height is at most the tip, and the youngest is dropped last), changed ones where they
// live, unless a re-reported one is now above what its generation may hold.
function flushPending(d: Draft, pending: Map<string, Withdrawal | typeof REMOVED>): void {
  const gens = ownGens(d);
  const oldest = oldestRetained(d);
  const young = gens[0]!;
  // Only the version at the log's end may append to it; a branch gives the log up.
  const log = young.log !== undefined && young.log.n === young.logged ? young.log : undefined;
  let youngMap = young.map;
  // Only withdrawals this call changed that were persisted before it touch older maps.
  const maps = d.homes === undefined ? undefined : gens.map((g) => g.map);
  // Sealed generations this call made, oldest first: nobody else holds them, so new
  // withdrawals may go there (their filters are rebuilt below).
  const freshTargets = freshSealed(d, gens);
  for (const [id, w] of pending) {
    if (maps !== undefined) {
      const opened = d.homes!.get(id);
      const at = opened === undefined ? -1 : gens.findIndex((g) => g.opened === opened);
      if (at >= 0) {
        const home = gens[at]!;
        if (w !== REMOVED && (home.sealed === null || w.height <= home.sealed)) {
          if (at === 0) youngMap = mapSet(youngMap, id, w, d.owner);
          else maps[at] = mapSet(maps[at]!, id, w, d.owner);
          continue;
        }
        if (at === 0) youngMap = mapDelete(youngMap, id, d.owner);
        else maps[at] = mapDelete(maps[at]!, id, d.owner);
      }
    }
    if (w !== REMOVED && w.height >= oldest) {
      const hash = hashOf(id);
      const at = freshTargets === undefined ? -1 : targetOf(freshTargets, w.height);
      if (at >= 0) {
        // A generation this call sealed, that may still hold this height: a long batch
        // spreads its withdrawals over generations as single events would have.
        const t = freshTargets![at]!;
        t.map = mapSet(t.map, id, w, d.owner, hash);
        t.hashes.push(hash);
        continue;
      }
      const before = youngMap.size;
      youngMap = mapSet(youngMap, id, w, d.owner, hash);
      if (log !== undefined && youngMap.size > before) logHash(log, hash);
    }
  }
  if (youngMap !== young.map)
    gens[0] = {
      map: youngMap,
      opened: young.opened,
      sealed: null,
      filter: undefined,
      log,
      logged: log === undefined ? 0 : log.n,
    };
  // The generations that held changed withdrawals, then the ones this call sealed and
  // filled (never the same: those held nothing before this call).
  if (maps !== undefined) {
    for (let i = 1; i < gens.length; i++) {
      const g = gens[i]!;
      if (maps[i] !== g.map)
        gens[i] = {
          map: maps[i]!,
          opened: g.opened,
          sealed: g.sealed,
          filter: g.filter,
          log: undefined,
          logged: 0,
        };
    }
  }
  if (freshTargets !== undefined) {
    for (const t of freshTargets) {
      if (t.hashes.length === 0) continue;
      const g = gens[t.index]!;
      gens[t.index] = {
        map: t.map,
        opened: g.opened,
        sealed: g.sealed,
        filter: filterOfHashes(t.hashes, t.hashes.length),
        log: undefined,
        logged: 0,
      };
    }
  }
}

interface FreshTarget {
  readonly index: number;
  readonly sealed: Height;
  map: PMap<Withdrawal>;
  readonly hashes: number[];
}

function freshSealed(d: Draft, gens: Generation[]): FreshTarget[] | undefined {
  if (d.fresh === undefined) return undefined;
  const out: FreshTarget[] = [];
  for (let i = gens.length - 1; i >= 1; i--) {
    const g = gens[i]!;
    // Only an empty one: its filter then covers exactly what goes in now.
    if (d.fresh.has(g) && g.sealed !== null && g.map.size === 0)
      out.push({ index: i, sealed: g.sealed, map: g.map, hashes: [] });
  }
  return out.length === 0 ? undefined : out;
}

// The oldest target that may hold `height` (sealed at or above it), or -1 for the youngest.
function targetOf(targets: ReadonlyArray<FreshTarget>, height: Height): number {
  for (let i = 0; i < targets.length; i++) if (targets[i]!.sealed >= height) return i;
  return -1;
}

function freeze(d: Draft): LimitsState {
  if (d.pending !== undefined) flushPending(d, d.pending);
  if (d.bookCache !== undefined) {
    for (const [account, book] of d.bookCache) {
      if (book === DROPPED_BOOK) d.books = mapDelete(d.books, account, d.owner);
      else if (book !== NO_BOOK && book.owner === d.owner)
        d.books = mapSet(d.books, account, book, d.owner);
    }
  }
  return asState({
    historyBlocks: d.historyBlocks,
    tip: d.tip,
    highestTip: d.highestTip,
    limits: d.limits,
    entries: d.entries,
    peggedTotal: d.peggedTotal,
    throttleProfile: d.throttleProfile,
    throttleInitiator: d.throttleInitiator,
    throttleKeys: d.throttleKeys,
    ring: d.ring,
    window: d.window,
    generations: d.generations,
    books: d.books,
    accountPegged: d.accountPegged,
  });
}

// ---------------------------------------------------------------------------------------
// Handlers: each validates, then changes the draft; a LimitsError thrown anywhere discards
// the whole draft, so the input state is never touched.

function setLimits(d: Draft, input: unknown, path: string): void {
  const caps = validateCaps(input, path, d.historyBlocks, ['accountCaps']);
  const accountCaps = (input as LimitsConfig).accountCaps;
  const updates: Array<[string, Caps]> = [];
  if (accountCaps !== undefined) {
    const at = joinPath(path, 'accountCaps');
    for (const [account, entry] of accountCapsEntries(accountCaps, at)) {
      const entryPath = joinPath(at, account);
      requireAccount(account, entryPath);
      updates.push([account, validateCaps(entry, entryPath, d.historyBlocks)]);
    }
  }
  d.limits = caps;
  for (const [account, entry] of updates) setEntry(d, account, entry);
  // An operator setting the caps overrides throttle mode (SPEC §3).
  d.throttleInitiator = null;
  d.changed = true;
}

function setEntry(d: Draft, account: string, caps: Caps): void {
  const had = (mapGet(d.entries, account)?.rollingWithdrawalBlocks ?? null) !== null;
  const has = caps.rollingWithdrawalBlocks !== null;
  d.entries = isEmptyCaps(caps)
    ? mapDelete(d.entries, account, d.owner)
    : mapSet(d.entries, account, caps, d.owner);
  // Only an account whose entry sets its own window keeps its own per-block sums.
  if (has && !had) openBook(d, account);
  else if (had && !has) {
    d.bookCache ??= new Map();
    d.bookCache.set(account, DROPPED_BOOK);
  }
  d.changed = true;
}

// An entry gained its own window: its sums over the retained history must be exact (SPEC
// §1.2), so the account's held withdrawals are summed once: O(withdrawals held), for this
// rare operator event only.
function openBook(d: Draft, account: string): void {
  const book: Book = { tree: d.ring.empty, upTo: d.highestTip, owner: d.owner };
  forEachHeld(d, (w) => {
    if (w.account === account && !w.rejected)
      book.tree = addAt(d.ring, book.tree, w.height, w.amount, 1, undefined, d.owner);
  });
  d.bookCache ??= new Map();
  d.bookCache.set(account, book);
}

function bookAdd(d: Draft, account: string, height: Height, delta: bigint, count: number): void {
  const book = bookOf(d, account);
  if (book === undefined) return;
  const owned = ownBook(d, account, book);
  owned.tree = addAt(d.ring, owned.tree, height, delta, count, undefined, d.owner);
}

// Removes every withdrawal at heights from..to (all inside the history) from the id map,
// the books and the ring: a reorganization, rare and shallow, so one by one.
function dropHeights(d: Draft, from: Height, to: Height): void {
  visitHeights(d.ring, d.window, from, to, (id) => {
    const w = findWithdrawal(d, id);
    if (w === undefined || w.height < from || w.height > to) return;
    changeFound(d, id, REMOVED);
    if (!w.rejected) bookAdd(d, w.account, w.height, -w.amount, -1);
  });
  d.window = clearHeights(d.ring, d.window, from, to, d.owner);
  d.changed = true;
}

// The highest tip rises from `before` to `after`: the heights that leave the history are
// forgotten in bulk. The ring clears them as a range; the books clear them when next read
// or changed; the id map drops whole generations once all they hold has left.
function forget(d: Draft, before: Height | null, after: Height): void {
  if (before !== null) {
    const from = Math.max(0, before - d.historyBlocks + 1);
    const to = after - d.historyBlocks;
    if (from <= to) {
      // A batch that added withdrawals lets go of those it forgets, so a long replay holds
      // no more than the history; persisted ones are left to their generation.
      const p = d.pending;
      if (p !== undefined && p.size > 0)
        visitHeights(d.ring, d.window, from, to, (id) => {
          if (d.homes?.get(id) === undefined) p.delete(id);
        });
      d.window = clearHeights(d.ring, d.window, from, to, d.owner);
    }
  }
  const young = d.generations[0]!;
  const span = Math.ceil(d.historyBlocks / GENERATIONS);
  if (young.opened === null || before === null) {
    const wasFresh = d.fresh?.has(young) === true;
    ownGens(d)[0] = {
      map: young.map,
      opened: after,
      sealed: null,
      filter: undefined,
      log: young.log,
      logged: young.logged,
    };
    if (wasFresh) d.fresh!.add(d.generations[0]!);
  } else if (after - young.opened >= span) {
    const g = ownGens(d);
    const wasFresh = d.fresh?.has(young) === true;
    g[0] = {
      map: young.map,
      opened: young.opened,
      sealed: before,
      filter: filterOf(young),
      log: undefined,
      logged: 0,
    };
    g.unshift({
      map: emptyMap(),
      opened: after,
      sealed: null,
      filter: undefined,
      log: newLog(),
      logged: 0,
    });
    d.fresh ??= new Set();
    d.fresh.add(g[0]!);
    if (wasFresh) d.fresh.add(g[1]!);
  }
  const oldest = after - d.historyBlocks + 1;
  for (
    let last = d.generations[d.generations.length - 1]!;
    last.sealed !== null && last.sealed < oldest;
  ) {
    ownGens(d).pop();
    last = d.generations[d.generations.length - 1]!;
  }
}

function blockConnected(d: Draft, e: Record<string, unknown>): void {
  const height = requireHeight(e.height, 'height');
  if (d.tip !== null && height <= d.tip) {
    fail(
      'height_not_above_tip',
      `a connected block must be above the tip ${d.tip}, got ${height}`,
      'height',
    );
  }
  if (d.highestTip === null || height > d.highestTip) {
    forget(d, d.highestTip, height);
    d.highestTip = height;
  }
  d.tip = height;
  d.changed = true;
}

function chainReorganized(d: Draft, e: Record<string, unknown>): void {
  const height = requireHeight(e.height, 'height');
  if (d.tip === null || height >= d.tip) {
    fail(
      'height_not_below_tip',
      d.tip === null
        ? 'no block is known yet, so there is nothing to reorganize'
        : `a reorganization must go below the tip ${d.tip}, got ${height}`,
      'height',
    );
  }
  const oldest = oldestRetained(d);
  if (height < oldest) {
    fail(
      'reorg_too_deep',
      `height ${height} is below the retained history (${oldest}…${d.highestTip}); raise historyBlocks to allow deeper reorganizations`,
      'height',
    );
  }
  dropHeights(d, height + 1, d.tip);
  d.tip = height;
}

/** The oldest height whose data the state still holds (0 before the history fills up). */
function oldestRetained(s: Pick<LimitsState, 'highestTip' | 'historyBlocks'>): Height {
  return s.highestTip === null ? 0 : Math.max(0, s.highestTip - s.historyBlocks + 1);
}

function withdrawalRequested(d: Draft, e: Record<string, unknown>): void {
  const id = requireId(e.id, 'id');
  // An account this call has looked a book up for has been validated already.
  const cached = d.bookCache?.get(e.account as string);
  const account =
    cached !== undefined ? (e.account as string) : requireAccount(e.account, 'account');
  const amount = requirePositive(e.amount, 'amount');
  const height = requireHeight(e.height, 'height');
  if (d.tip === null || height > d.tip) {
    fail(
      'height_ahead_of_tip',
      d.tip === null ? 'no block is known yet' : `height ${height} is above the tip ${d.tip}`,
      'height',
    );
  }
  const known = findWithdrawal(d, id);
  if (known !== undefined) {
    if (known.account === account && known.amount === amount && known.height === height) return;
    fail(
      'duplicate_withdrawal',
      `withdrawal "${id}" is already known with another payload (account ${JSON.stringify(known.account)}, amount ${known.amount}, height ${known.height})`,
      'id',
    );
  }
  // Older than the retained history: accepted, counted nowhere (SPEC §2).
  if (height < oldestRetained(d)) return;
  pendingOf(d).set(id, { id, account, amount, height, rejected: false });
  d.window = addAt(d.ring, d.window, height, amount, 1, id, d.owner);
  if (cached !== NO_BOOK) bookAdd(d, account, height, amount, 1);
  d.changed = true;
}

function withdrawalRejected(d: Draft, e: Record<string, unknown>): void {
  const id = requireId(e.id, 'id');
  const w = findWithdrawal(d, id);
  if (w === undefined) {
    fail(
      'unknown_withdrawal',
      `no withdrawal "${id}" is held (never requested, dropped by a reorganization, or older than the history)`,
      'id',
    );
  }
  if (w.rejected) return;
  changeFound(d, id, {
    id: w.id,
    account: w.account,
    amount: w.amount,
    height: w.height,
    rejected: true,
  });
  d.window = addAt(d.ring, d.window, w.height, -w.amount, 0, undefined, d.owner);
  bookAdd(d, w.account, w.height, -w.amount, -1);
  d.changed = true;
}

function peggedTotalObserved(d: Draft, e: Record<string, unknown>): void {
  const total = requireCap(e.total, 'total');
  if (e.account === undefined) {
    if (d.peggedTotal !== total) d.changed = true;
    d.peggedTotal = total;
    return;
  }
  const account = requireAccount(e.account, 'account');
  if ((mapGet(d.accountPegged, account) ?? 0n) === total) return;
  d.accountPegged =
    total === 0n
      ? mapDelete(d.accountPegged, account, d.owner)
      : mapSet(d.accountPegged, account, total, d.owner);
  d.changed = true;
}

function accountLimitsSet(d: Draft, e: Record<string, unknown>): void {
  const account = requireAccount(e.account, 'account');
  setEntry(d, account, validateCaps(e.limits, 'limits', d.historyBlocks));
}

// The throttle key registry and throttle mode (SPEC §3).

function requireKeyName(value: unknown, path: string): string {
  return requireName(value, path, 'invalid_key_name', 'a key name');
}

function requireKey(d: Draft, name: string): ThrottleKey {
  const key = mapGet(d.throttleKeys, name);
  if (key === undefined)
    fail('unknown_key', `no throttle key is named ${JSON.stringify(name)}`, 'name');
  return key;
}

/** `throttleKeyAdded`: registers a key by name and secret hash; a name that exists is refused. */
function throttleKeyAdded(d: Draft, e: Record<string, unknown>): void {
  const name = requireKeyName(e.name, 'name');
  if (!isSecretHash(e.secretHash)) {
    fail(
      'invalid_secret_hash',
      'expected a secret hash made by hashThrottleSecret (sha256:<salt>:<digest>)',
      'secretHash',
    );
  }
  if (mapGet(d.throttleKeys, name) !== undefined) {
    fail(
      'duplicate_key',
      `a throttle key named ${JSON.stringify(name)} exists already; revoke it or pick another name`,
      'name',
    );
  }
  d.throttleKeys = mapSet(
    d.throttleKeys,
    name,
    { name, secretHash: e.secretHash, revoked: false },
    d.owner,
  );
  d.changed = true;
}

/** `throttleKeyRevoked` / `throttleKeyReactivated`: a no-op when the key is already so. */
function throttleKeyRevocation(revoked: boolean): (d: Draft, e: Record<string, unknown>) => void {
  return (d, e) => {
    const key = requireKey(d, requireKeyName(e.name, 'name'));
    if (key.revoked === revoked) return;
    d.throttleKeys = mapSet(d.throttleKeys, key.name, { ...key, revoked }, d.owner);
    d.changed = true;
  };
}

/** `throttleStarted`: turns the overlay on; while active, nothing changes and the first initiator stays. */
function throttleStarted(d: Draft, e: Record<string, unknown>): void {
  const initiator = requireKeyName(e.initiator, 'initiator');
  if (d.throttleInitiator !== null) return;
  d.throttleInitiator = initiator;
  d.changed = true;
}

/** `throttleEnded`: removes the overlay; a no-op when throttle mode is not active. */
function throttleEnded(d: Draft): void {
  if (d.throttleInitiator === null) return;
  d.throttleInitiator = null;
  d.changed = true;
}

type EventHandler = (d: Draft, e: Record<string, unknown>) => void;

const handlers = new Map<string, EventHandler>([
  ['limitsSet', (d, e) => setLimits(d, e.limits, 'limits')],
  ['accountLimitsSet', accountLimitsSet],
  ['blockConnected', blockConnected],
  ['chainReorganized', chainReorganized],
  ['withdrawalRequested', withdrawalRequested],
  ['withdrawalRejected', withdrawalRejected],
  ['peggedTotalObserved', peggedTotalObserved],
  ['throttleKeyAdded', throttleKeyAdded],
  ['throttleKeyRevoked', throttleKeyRevocation(true)],
  ['throttleKeyReactivated', throttleKeyRevocation(false)],
  ['throttleStarted', throttleStarted],
  ['throttleEnded', throttleEnded],
]);

function step(d: Draft, value: unknown): void {
  const event = value as Record<string, unknown>;
  if (typeof value !== 'object' || value === null || typeof event.type !== 'string') {
    fail(
      'invalid_event',
      `expected an event object with a string "type", got ${describe(event)}`,
      'type',
    );
  }
  // The two events of every block first: a replay is mostly these.
  if (event.type === 'withdrawalRequested') withdrawalRequested(d, event);
  else if (event.type === 'blockConnected') blockConnected(d, event);
  else {
    const handler = handlers.get(event.type);
    if (handler === undefined)
      fail('invalid_event', `unknown event type ${describe(event.type)}`, 'type');
    handler(d, event);
  }
}

function withIndex(error: LimitsError, index: number): LimitsError {
  const path = error.path === undefined ? `[${index}]` : `[${index}].${error.path}`;
  return new LimitsError(error.code, `event ${index}: ${error.message}`, path);
}

function run(state: LimitsState, events: Iterable<unknown>, indexed: boolean): ApplyResult {
  const d = draftOf(state, !indexed);
  let index = 0;
  try {
    for (const event of events) {
      try {
        step(d, event);
      } catch (e) {
        if (e instanceof LimitsError && indexed) throw withIndex(e, index);
        throw e;
      }
      index++;
    }
  } catch (e) {
    if (e instanceof LimitsError) return { ok: false, error: e };
    const message = e instanceof Error ? e.message : String(e);
    return {
      ok: false,
      error: new LimitsError('invalid_event', `could not read the event: ${message}`),
    };
  }
  return { ok: true, state: d.changed ? freeze(d) : state };
}

/**
 * Applies one event, returning the new state or an error; never changes `state`.
 * An event that changes nothing (a repeated withdrawal, a second rejection) returns the
 * same state object.
 *
 * @example
 * ```ts
 * const r = apply(state, { type: 'blockConnected', height: 840000 });
 * if (r.ok) state = r.state; else console.error(r.error.code, r.error.message);
 * ```
 */
export function apply(state: LimitsState, event: LimitsEvent): ApplyResult {
  return run(state, [event], false);
}

/**
 * Applies events in order, all or nothing: the first invalid event's error (its path
 * prefixed with its index, `[3].amount`) and no change, or the state after all of them.
 * Equal to folding {@link apply}, but works on one private copy, so a replay costs about
 * what plain mutable structures would.
 *
 * @example
 * ```ts
 * const r = applyAll(state, [
 *   { type: 'blockConnected', height: 100 },
 *   { type: 'withdrawalRequested', id: 'w1', account: 'alice', amount: 5000n, height: 100 },
 * ]);
 * ```
 */
export function applyAll(state: LimitsState, events: Iterable<LimitsEvent>): ApplyResult {
  return run(state, events, true);
}

/** The oldest height with retained data, for the views. @internal */
export { oldestRetained };
