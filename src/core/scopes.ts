/**
 * Scopes: the three powers an operator may hold, and the one each event needs
 * (docs/semantics.md, "Operators"). The feeder of a chain holds `chain` alone, so a stolen
 * feeder credential can report blocks and withdrawals but never touch a cap or a key.
 */

/** A power an operator may hold. */
export type Scope = 'chain' | 'limits' | 'keys';

/** Every scope, in the order they are listed. */
export const SCOPES: ReadonlyArray<Scope> = ['chain', 'limits', 'keys'];

const BY_TYPE: Readonly<Record<string, Scope>> = {
  blockConnected: 'chain',
  chainReorganized: 'chain',
  withdrawalRequested: 'chain',
  withdrawalRejected: 'chain',
  withdrawalRejectionUndone: 'chain',
  peggedTotalObserved: 'chain',
  reservesObserved: 'chain',
  historyCompleteFrom: 'chain',
  blocksHeld: 'chain',
  depositMinted: 'chain',
  // Raising it is the chain's; lowering it frees room, which needs `limits` (`scopeOfEvent`).
  mintHistoryCompleteFrom: 'chain',
  limitsSet: 'limits',
  limitsUpdated: 'limits',
  accountLimitsSet: 'limits',
  throttleStarted: 'limits',
  throttleEnded: 'limits',
  // Ending a hold gives room back: not a feeder's to do.
  blocksReleased: 'limits',
  // The check of the peg's backing, and the breaker's clearing: the limits' own.
  pegIntegritySet: 'limits',
  pegBreakerCleared: 'limits',
  changeProposed: 'limits',
  changeApproved: 'limits',
  changeCancelled: 'limits',
  throttleKeyAdded: 'keys',
  throttleKeyRevoked: 'keys',
  throttleKeyReactivated: 'keys',
};

/**
 * The scope an event of type `type` needs, or `undefined` for a type that is no event.
 *
 * @example
 * ```ts
 * scopeOf('blockConnected'); // 'chain'
 * scopeOf('limitsSet');      // 'limits'
 * scopeOf('throttleKeyRevoked'); // 'keys'
 * ```
 */
export function scopeOf(type: string): Scope | undefined {
  return Object.hasOwn(BY_TYPE, type) ? BY_TYPE[type] : undefined;
}

/**
 * The scope one event needs where the mint history is complete from `mintFrom` (`null`: from
 * the start): its type's, except that lowering the mint history's start frees room, so a
 * `mintHistoryCompleteFrom` below `mintFrom` needs `limits`.
 */
export function scopeOfEvent(
  event: { readonly type: string; readonly height?: unknown },
  mintFrom: number | null,
): Scope | undefined {
  if (
    event.type === 'mintHistoryCompleteFrom' &&
    mintFrom !== null &&
    typeof event.height === 'number' &&
    event.height < mintFrom
  )
    return 'limits';
  return scopeOf(event.type);
}

/** True when `value` names a scope. */
export function isScope(value: unknown): value is Scope {
  return value === 'chain' || value === 'limits' || value === 'keys';
}

/**
 * The scopes a batch of events needs, each once, in the order of {@link SCOPES}.
 *
 * @example
 * ```ts
 * scopesOf([{ type: 'limitsSet', limits: {} }, { type: 'throttleKeyRevoked', name: 'k' }]);
 * // ['limits', 'keys']
 * ```
 */
export function scopesOf(events: Iterable<{ readonly type: string }>): ReadonlyArray<Scope> {
  const needed = new Set<Scope>();
  for (const e of events) {
    const scope = scopeOf(e.type);
    if (scope !== undefined) needed.add(scope);
  }
  return SCOPES.filter((s) => needed.has(s));
}

/** Whether an operator (anything with `scopes`) holds every scope of `needed`. */
export function holds(
  operator: { readonly scopes: ReadonlyArray<Scope> },
  needed: ReadonlyArray<Scope>,
): boolean {
  return needed.every((s) => operator.scopes.includes(s));
}
