/**
 * What a state knows of the chain, as a feed reads it: the tip, the retained history, from
 * which height the history is complete, and from which height blocks are held. Read-only,
 * so that nothing outside the core reads the state's fields.
 */
import { type Height, type LimitsState, oldestRetained } from './draft.js';

/** What a state knows of the chain: see {@link chainView}. */
export interface ChainView {
  /** The tip, or `null` before any block is known. */
  readonly tip: Height | null;
  /** The highest tip ever seen (a reorganization lowers the tip, not this). */
  readonly highestTip: Height | null;
  /** How many heights of per-block data the state keeps, up to the highest tip. */
  readonly historyBlocks: number;
  /** The oldest height whose withdrawals the state still holds (0 before the history fills up). */
  readonly oldestRetained: Height;
  /**
   * The height from which every withdrawal is known (`historyCompleteFrom`); `null` when the
   * history is complete from the start.
   */
  readonly completeFrom: Height | null;
  /** The burn height of the first block a feed holds past the chain bounds (`blocksHeld`), or `null`. */
  readonly heldFrom: Height | null;
  /**
   * The height from which every mint is known (`mintHistoryCompleteFrom`); `null` when the
   * mint history is complete from the start.
   */
  readonly mintCompleteFrom: Height | null;
}

/**
 * What the state knows of the chain: the tip, the history it keeps, where that history is
 * complete from, and what a feed holds. What a feed of the chain reads before it sends the
 * next batch.
 *
 * @example
 * ```ts
 * chainView(createLimitsState());
 * // { tip: null, highestTip: null, historyBlocks: 2016, oldestRetained: 0, completeFrom: null, heldFrom: null, mintCompleteFrom: null }
 * ```
 */
export function chainView(state: LimitsState): ChainView {
  return {
    tip: state.tip,
    highestTip: state.highestTip,
    historyBlocks: state.historyBlocks,
    oldestRetained: oldestRetained(state),
    completeFrom: state.completeFrom,
    heldFrom: state.heldFrom,
    mintCompleteFrom: state.mintCompleteFrom,
  };
}
