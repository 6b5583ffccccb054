import { DAY_MS, MINUTE_MS } from '../time.ts';

/**
 * The service's two request limits per authenticated user, as a pure function of (state, now):
 *
 * - per minute: a fixed 60 s window that opens at the first request after the previous window ended (Laravel's
 *   throttle; not aligned to clock minutes), and
 * - per day: a rolling 24 h window counting the accepted requests of the last 24 hours.
 *
 * Invariant: a rejected request consumes nothing, so a client hammering at the limit does not push its own window out.
 */

export interface RateLimits {
  /** @default 60 */
  minuteLimit?: number;
  /** @default 1440 */
  dailyLimit?: number;
}

export interface RateDecision {
  allowed: boolean;
  /** Requests left in the current minute window (the `x-ratelimit-remaining` header); 0 when rejected. */
  remaining: number;
  /** Whole seconds until a request would be accepted again (the `retry-after` header); 0 when allowed. */
  retryAfterSec: number;
}

interface UserWindows {
  minuteStart: number;
  minuteCount: number;
  /** Times of accepted requests, oldest first; entries before `head` have aged out of the 24 h window. */
  accepted: number[];
  head: number;
}

export class RateLimiter {
  readonly minuteLimit: number;
  readonly dailyLimit: number;
  readonly #users = new Map<string, UserWindows>();

  constructor(limits: RateLimits = {}) {
    this.minuteLimit = limits.minuteLimit ?? 60;
    this.dailyLimit = limits.dailyLimit ?? 1440;
    for (const limit of [this.minuteLimit, this.dailyLimit]) {
      if (!Number.isInteger(limit) || limit < 1) {
        throw new RangeError(`a rate limit must be a whole number ≥ 1 (${limit})`);
      }
    }
  }

  /** Counts a request of `user` at `nowMs` if both limits allow it. */
  consume(user: string, nowMs: number): RateDecision {
    const w = this.#windows(user);
    // A clock set backwards (ManualClock.set) keeps the current window rather than opening a second one.
    const minuteOver = nowMs >= w.minuteStart + MINUTE_MS;
    const minuteCount = minuteOver ? 0 : w.minuteCount;
    while (w.head < w.accepted.length && w.accepted[w.head]! <= nowMs - DAY_MS) w.head++;
    compact(w);
    const dailyCount = w.accepted.length - w.head;

    let retryAfterMs = 0;
    if (minuteCount >= this.minuteLimit) retryAfterMs = w.minuteStart + MINUTE_MS - nowMs;
    if (dailyCount >= this.dailyLimit) retryAfterMs = Math.max(retryAfterMs, w.accepted[w.head]! + DAY_MS - nowMs);
    if (retryAfterMs > 0) return { allowed: false, remaining: 0, retryAfterSec: Math.ceil(retryAfterMs / 1000) };

    if (minuteOver) w.minuteStart = nowMs;
    w.minuteCount = minuteCount + 1;
    w.accepted.push(nowMs);
    return { allowed: true, remaining: this.minuteLimit - w.minuteCount, retryAfterSec: 0 };
  }

  #windows(user: string): UserWindows {
    let w = this.#users.get(user);
    if (!w) {
      w = { minuteStart: -Infinity, minuteCount: 0, accepted: [], head: 0 };
      this.#users.set(user, w);
    }
    return w;
  }
}

/** Drops aged-out entries once they are the bulk of the array, keeping `consume` amortised O(1). */
function compact(w: UserWindows): void {
  if (w.head > 1024 && w.head * 2 > w.accepted.length) {
    w.accepted = w.accepted.slice(w.head);
    w.head = 0;
  }
}
