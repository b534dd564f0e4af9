/**
 * Read your writes (docs/replicas.md): a read that names a log position in
 * `Peg-Limits-Min-Position` is answered once this replica shows it, or after
 * {@link MIN_POSITION_WAIT_MS} with 503 `catching_up`. Node-only.
 */
import type { Service } from 'peg-limits';

/** The longest a request with `Peg-Limits-Min-Position` waits for its position. */
export const MIN_POSITION_WAIT_MS = 2_000;

/**
 * Resolves once reads see position `n` (woken by the state changing, not by polling), or
 * with false after {@link MIN_POSITION_WAIT_MS}.
 */
export function reached(service: Service, position: () => number, n: number): Promise<boolean> {
  return new Promise((resolve) => {
    const stop = service.watch(() => {
      if (position() < n) return;
      clearTimeout(timer);
      stop();
      resolve(true);
    });
    const timer = setTimeout(() => {
      stop();
      resolve(false);
    }, MIN_POSITION_WAIT_MS);
  });
}
