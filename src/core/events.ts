/**
 * The events, as types: the only way a state changes (docs/semantics.md, "Events"), and
 * the pending changes that loosening events wait in. The rules that apply them are in
 * `state.ts` (the operator's), `chain.ts`, `throttle.ts` and `changes.ts`.
 */
import type { Amount } from './amount.js';
import type { LimitsError } from './errors.js';
import type { CapsInput, LimitsConfig } from './limits.js';

/** Block height: a non-negative safe integer. */
export type Height = number;

/** Every event a state takes. Amounts are bigint, heights are numbers. */
export type LimitsEvent =
  | { readonly type: 'limitsSet'; readonly limits: LimitsConfig }
  | { readonly type: 'accountLimitsSet'; readonly account: string; readonly limits: CapsInput }
  /**
   * Changes only the caps it names, globally and in the account entries it lists (`null`
   * unsets one); every other field stays as it is. Unlike `limitsSet`, it does not end
   * throttle mode.
   */
  | { readonly type: 'limitsUpdated'; readonly limits: LimitsConfig }
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
  /**
   * A mint the chain made (for sBTC a completed deposit, `id` its outpoint `<txid>:<vout>`),
   * counted against the mint windows at `height`, the base-chain height of the block that
   * minted it (docs/semantics.md, "The mint window"). It does not move the pegged total.
   */
  | {
      readonly type: 'depositMinted';
      readonly id: string;
      readonly account: string;
      readonly amount: Amount;
      readonly height: Height;
    }
  /**
   * Every mint at `height` and above is known: a mint window reaching below it reports no
   * room. Raising it is chain traffic; lowering it frees room, so it is a loosening.
   */
  | { readonly type: 'mintHistoryCompleteFrom'; readonly height: Height }
  /**
   * A rejection undone: the block that carried it left the canonical chain, so the
   * withdrawal counts again at its own height (no reorganization below it is needed).
   */
  | { readonly type: 'withdrawalRejectionUndone'; readonly id: string }
  /**
   * The withdrawals requested at `height` and above are all known (reported from there
   * on): a window reaching below it is incomplete, and reports no room (docs/semantics.md,
   * "A history that starts late").
   */
  | { readonly type: 'historyCompleteFrom'; readonly height: Height }
  /**
   * A feed holds blocks past the chain bounds, the first at burn height `height`: the chain
   * has moved on and what the held blocks request is not counted yet, so every window reports
   * no room until the hold ends (docs/semantics.md, "Held blocks"). A no-op while held.
   */
  | { readonly type: 'blocksHeld'; readonly height: Height }
  /** The hold ended: the held blocks were released or dropped. A no-op when none is held. */
  | { readonly type: 'blocksReleased' }
  | {
      readonly type: 'peggedTotalObserved';
      readonly total: Amount;
      readonly account?: string | undefined;
    }
  /**
   * The reserves that back the peg (sBTC: the BTC in the signers' wallet), read from the base
   * chain at burn height `height` (docs/semantics.md, "A forged mint cannot be withdrawn").
   */
  | { readonly type: 'reservesObserved'; readonly total: Amount; readonly height: Height }
  /**
   * The check of the peg's backing: unbacked when the pegged total exceeds the reserves by
   * more than `maxUnbacked` (`null`: no check); reserves read more than `reservesMaxAge`
   * blocks below the tip are unknown. Raising either, or turning the check off, loosens.
   */
  | {
      readonly type: 'pegIntegritySet';
      readonly maxUnbacked: Amount | null;
      readonly reservesMaxAge: number;
    }
  /** An operator clears the tripped breaker (a loosening); a peg still unbacked trips it again. */
  | { readonly type: 'pegBreakerCleared' }
  | { readonly type: 'throttleKeyAdded'; readonly name: string; readonly secretHash: string }
  | { readonly type: 'throttleKeyRevoked'; readonly name: string }
  | { readonly type: 'throttleKeyReactivated'; readonly name: string }
  | { readonly type: 'throttleStarted'; readonly initiator: string }
  | { readonly type: 'throttleEnded' }
  | {
      /**
       * A batch that loosens the limits, held back as a pending change: it applies once the
       * tip has risen `delayBlocks` blocks (null: never by time), or once `quorum`
       * operators (0: none is enough) have approved it, the proposer first.
       */
      readonly type: 'changeProposed';
      readonly events: ReadonlyArray<LimitsEvent>;
      readonly proposedBy: string;
      readonly delayBlocks: number | null;
      readonly quorum: number;
    }
  | { readonly type: 'changeApproved'; readonly id: number; readonly by: string }
  | { readonly type: 'changeCancelled'; readonly id: number; readonly by: string };

/** A batch that loosens the limits, waiting for its time or its quorum. */
export interface PendingChange {
  /** Its number: 1 for the first change a state ever held, never used twice. */
  readonly id: number;
  /** The batch, applied all or nothing when the change applies. */
  readonly events: ReadonlyArray<LimitsEvent>;
  /** The operator who proposed it. */
  readonly proposedBy: string;
  /** The tip when it was proposed (null before any block). */
  readonly proposedAt: Height | null;
  /** The blocks it waits (null: it applies only by quorum). */
  readonly delayBlocks: number | null;
  /**
   * The tip at which it applies: `proposedAt + delayBlocks`; null when it waits for a
   * quorum only, or, proposed before any block, until the first block sets it.
   */
  readonly effectiveAt: Height | null;
  /** Approvals that apply it at once (0: none do; otherwise at least 2). */
  readonly quorum: number;
  /** The operators who approved it, the proposer first. */
  readonly approvals: ReadonlyArray<string>;
}

/** What became of a pending change during one `apply`/`applyAll`. */
export interface SettledChange {
  readonly change: PendingChange;
  /**
   * `applied`: its batch applied (its time came, or its quorum); `dropped`: its batch no
   * longer applies (see `error`); `cancelled`: an operator cancelled it, or throttle mode
   * was started.
   */
  readonly outcome: 'applied' | 'dropped' | 'cancelled';
  /** Why a dropped change no longer applies (its path names the event of its batch). */
  readonly error?: LimitsError | undefined;
}
