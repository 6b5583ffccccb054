/** Small statistics over lags and request logs. A lag of null is a change never reflected: it counts as infinite. */

export interface LagStats {
  /** Changes counted. */
  n: number;
  /** Of those, never reflected by the end of the run. */
  unreflected: number;
  /** Milliseconds; null when the quantile falls on an unreflected change (infinite). */
  p50: number | null;
  p95: number | null;
  max: number | null;
}

/** The q-quantile (nearest rank) of lags, nulls sorting last as +∞. */
export function quantile(lags: readonly (number | null)[], q: number): number | null {
  if (lags.length === 0) return null;
  const sorted = lags.filter((l): l is number => l !== null).sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(q * lags.length));
  return rank <= sorted.length ? sorted[rank - 1]! : null;
}

export function lagStats(lags: readonly (number | null)[]): LagStats {
  return {
    n: lags.length,
    unreflected: lags.filter((l) => l === null).length,
    p50: quantile(lags, 0.5),
    p95: quantile(lags, 0.95),
    max: lags.length === 0 ? null : quantile(lags, 1),
  };
}

/** The most requests in any window of `windowMs`, from sorted instants. */
export function maxInWindow(sortedTimes: readonly number[], windowMs: number): number {
  let best = 0;
  let first = 0;
  for (let i = 0; i < sortedTimes.length; i++) {
    while (sortedTimes[first]! <= sortedTimes[i]! - windowMs) first++;
    best = Math.max(best, i - first + 1);
  }
  return best;
}

/** Requests in [from, to) from sorted instants. */
export function countBetween(sortedTimes: readonly number[], from: number, to: number): number {
  return lowerBound(sortedTimes, to) - lowerBound(sortedTimes, from);
}

function lowerBound(sorted: readonly number[], t: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
