import { MINUTE_MS } from '../time.ts';

/**
 * Exponential back-off, the one rule behind every "wait longer each time" in the daemon: `first` after one failure,
 * doubling with each failure in a row, never above `max`. The callers keep their own count of failures in a row (reset
 * by a success) and add the delay to the `now` they read once.
 */
export interface BackoffPolicy {
  readonly first: number;
  readonly max: number;
}

/** A 429 answered in a row: beyond the server's Retry-After, 15 s doubling to 15 min. */
export const RATE_LIMIT_BACKOFF: BackoffPolicy = { first: 15_000, max: 15 * MINUTE_MS };
/** A pass that ended on server trouble or failed outright: 1 min doubling to 30 min. */
export const FAILURE_BACKOFF: BackoffPolicy = { first: MINUTE_MS, max: 30 * MINUTE_MS };
/** A rejected token: 15 min doubling to 2 h (one request per try). */
export const AUTH_BACKOFF: BackoffPolicy = { first: 15 * MINUTE_MS, max: 120 * MINUTE_MS };

/** The wait after the `failures`-th failure in a row (1 for the first). */
export function backoffDelay(policy: BackoffPolicy, failures: number): number {
  if (failures < 1) return 0;
  // 2 ** 60 and beyond would lose precision long after `max` is reached; stop doubling early.
  return Math.min(policy.max, policy.first * 2 ** Math.min(failures - 1, 40));
}
