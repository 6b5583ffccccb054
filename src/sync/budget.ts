import type { LedgerSample } from '../model/ledgerSample.ts';
import { DAY_MS, MINUTE_MS } from '../time.ts';

/**
 * The quota budget, computed from the request ledger (`api_requests`), so a restart or a crash never resets it.
 *
 * The spec gives 60 requests a minute and 1,440 a day per user, shared with every other client of the token, and does
 * not say when its day starts: a rolling 24 h window is the reading that is safe under every interpretation. The
 * configured reserve (API_RESERVE, 10 %) of both limits is never used.
 *
 * When the server's `x-ratelimit-remaining` shows more use in the current minute than our own ledger explains, someone
 * else is using the token. We believe the server: the minute allowance shrinks to what it says is left (minus our
 * reserve), and the other client's observed rate, projected over a day, comes out of our daily allowance where it
 * exceeds the reserve.
 *
 * Everything here is a pure function of (ledger, limits, now).
 */

/** Sampled minutes below which the estimate of other clients' use is diluted (4 h). */
const MIN_SAMPLED_MINUTES = 240;

export interface BudgetLimits {
  daily: number;
  minute: number;
  /** Fraction of both limits left unused. */
  reserve: number;
}

export interface BudgetSnapshot {
  now: number;
  /** Requests we may make per rolling 24 h after the reserve and other clients' use. */
  dailyAllowed: number;
  dailyUsed: number;
  dailyLeft: number;
  minuteAllowed: number;
  minuteUsed: number;
  minuteLeft: number;
  /** Other clients' requests per day, estimated from the server's headers; 0 when none seen. */
  foreignPerDay: number;
  /** Earliest instant at which a request may be sent (== now when one may go now). */
  nextSlotAt: number;
}

/**
 * What is left of `limit` beyond the reserve, in whole requests. The reserve is a decimal fraction, which binary
 * floating point does not hold exactly: 1440 × (1 − 0.9) is 143.99999999999997, and 144 were meant.
 */
function beyondReserve(limit: number, reserve: number): number {
  return Math.floor(limit * (1 - reserve) + 1e-9);
}

export function allowedPerDay(limits: BudgetLimits): number {
  return beyondReserve(limits.daily, limits.reserve);
}

export function allowedPerMinute(limits: BudgetLimits): number {
  return Math.max(1, beyondReserve(limits.minute, limits.reserve));
}

/**
 * The budget at `now`, from the ledger's samples (sorted by time, oldest first; older than 24 h are ignored).
 */
export function budgetAt(limits: BudgetLimits, samples: readonly LedgerSample[], now: number): BudgetSnapshot {
  const dayStart = now - DAY_MS;
  const minuteStart = now - MINUTE_MS;
  const first = lowerBound(samples, dayStart);
  const inDay = samples.length - first;
  const firstInMinute = lowerBound(samples, minuteStart);
  const minuteUsed = samples.length - firstInMinute;

  const foreign = foreignUse(limits, samples, first, now);
  const minuteServerLeft = foreign.lastMinuteRemaining;
  const reserveMinute = limits.minute - allowedPerMinute(limits);
  let minuteAllowed = allowedPerMinute(limits);
  if (minuteServerLeft !== null) {
    // The server says only `left` remain in its current minute: keep our reserve of those too.
    minuteAllowed = Math.min(minuteAllowed, minuteUsed + Math.max(0, minuteServerLeft - reserveMinute));
  }
  const reserveDay = limits.daily - allowedPerDay(limits);
  const dailyAllowed = Math.max(0, allowedPerDay(limits) - Math.max(0, Math.round(foreign.perDay) - reserveDay));
  const dailyLeft = Math.max(0, dailyAllowed - inDay);
  const minuteLeft = Math.max(0, minuteAllowed - minuteUsed);

  let nextSlotAt = now;
  if (dailyLeft === 0) {
    // The oldest request whose expiry brings the window back under the allowance.
    const excess = inDay - dailyAllowed;
    const sample = samples[first + Math.max(0, excess)];
    nextSlotAt = Math.max(nextSlotAt, sample ? sample.at + DAY_MS + 1 : now + MINUTE_MS);
  }
  if (minuteLeft === 0) {
    const excess = minuteUsed - minuteAllowed;
    const sample = samples[firstInMinute + Math.max(0, excess)];
    nextSlotAt = Math.max(nextSlotAt, sample ? sample.at + MINUTE_MS + 1 : now + MINUTE_MS);
  }
  return {
    now,
    dailyAllowed,
    dailyUsed: inDay,
    dailyLeft,
    minuteAllowed,
    minuteUsed,
    minuteLeft,
    foreignPerDay: Math.round(foreign.perDay),
    nextSlotAt,
  };
}

/**
 * Other clients' use of the token, from the server's headers. After each of our requests the server says how many
 * requests remain in its minute; `limit - remaining` were used by everyone, of which our ledger explains those we sent
 * in the previous 60 s (a sliding count, never smaller than the server's own window count). The excess is someone
 * else's. Taking the largest excess of each clock minute we sampled, their sum is what we saw of the others; scaled to
 * the day by the share of minutes we sampled (at least 4 h worth, so one burst cannot take the day away) it estimates
 * their daily use. A 429 says nothing here: its Retry-After is obeyed instead.
 */
function foreignUse(
  limits: BudgetLimits,
  samples: readonly LedgerSample[],
  first: number,
  now: number,
): { perDay: number; lastMinuteRemaining: number | null } {
  // The samples are in time order, so each clock minute's are in one run: its largest excess is added when the run
  // ends. (This runs on every request and every plan, over up to a day of samples: no map, no allocation.)
  let seen = 0;
  let minutes = 0;
  let minute = Number.NaN;
  let worst = 0;
  let windowStart = first;
  let lastMinuteRemaining: number | null = null;
  for (let i = first; i < samples.length; i++) {
    const s = samples[i]!;
    while (samples[windowStart]!.at <= s.at - MINUTE_MS) windowStart++;
    if (s.remaining === null || s.status === 429) continue;
    const ours = i - windowStart + 1;
    // No more than a minute's limit can have been used in a minute: headers that say more (a gateway's own counters,
    // `x-ratelimit-limit: 100000` with nothing remaining) are not the API's, and one such answer must not take the day.
    const everyone = Math.min(limits.minute, (s.limit ?? limits.minute) - s.remaining);
    const m = Math.floor(s.at / MINUTE_MS);
    if (m !== minute) {
      seen += worst;
      minutes++;
      minute = m;
      worst = 0;
    }
    worst = Math.max(worst, everyone - ours);
    if (s.at > now - MINUTE_MS) lastMinuteRemaining = s.remaining - (samples.length - 1 - i);
  }
  seen += worst;
  const perDay = Math.min(limits.daily, (seen * (DAY_MS / MINUTE_MS)) / Math.max(minutes, MIN_SAMPLED_MINUTES));
  return { perDay, lastMinuteRemaining };
}

/** Index of the first sample with `at > t`. */
function lowerBound(samples: readonly LedgerSample[], t: number): number {
  let lo = 0;
  let hi = samples.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (samples[mid]!.at <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
