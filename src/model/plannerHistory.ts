import { DAY_MS, HOUR_MS, MINUTE_MS } from '../time.ts';

/**
 * What the planner (sync/planner.ts) knows of the past and of the lists, as db/repos/work.ts reads it from the database
 * (the requests sent: from the budget's own samples, `requestUsage`).
 */

/** Width of the activity buckets of `PlannerHistory`. */
export const BUCKET_MS = 30 * MINUTE_MS;
export const BUCKETS_PER_DAY = DAY_MS / BUCKET_MS;
/** Half hours of list activity the planner sees: eight days, so that the same hour a week ago is always complete. */
export const HISTORY_BUCKETS = 8 * BUCKETS_PER_DAY;
/** Clock hours ahead the planner looks: the rolling window's 24. */
export const HOURS_AHEAD = 24;

export interface ListState {
  /** Last successful poll (epoch ms), or null. */
  lastPolledAt: number | null;
}

/**
 * What the last eight days looked like, for the schedule and the pacing (see db/repos/work.ts `plannerInputs`). Every
 * figure is counted in fixed clock buckets (half hours, hours), not in windows sliding with `now`, so that the plan
 * only changes at known instants and can say when it will next want anything (`Plan.wakeAt`).
 */
export interface PlannerHistory {
  /**
   * List changes (summed over the lists, as `list_polls` counts them) per clock half hour: [k] is the k-th before the
   * current one (k = 0: the current one, so far). Eight days (384 entries): the current hour a week ago is in them.
   */
  changes: number[];
  /** Epoch ms of the first list poll ever, or null: buckets before it are unknown, not quiet. */
  firstPollAt: number | null;
  /** List polls in the current and the previous 47 half hours. */
  pollsLastDay: number;
  /**
   * Requests still in the rolling 24 h window, by the clock hour in which their slots free up: [k] is the k-th hour
   * from the current one (k = 0: the rest of the current hour). 24 entries.
   */
  freeing: number[];
  /** Requests sent in the current clock hour. */
  sentThisHour: number;
  /** Of those, background's (backfill and revalidation): what the pace of revalidation counts. */
  backgroundThisHour: number;
  /** When the oldest request in the window leaves it (epoch ms), or null. */
  nextExpiryAt: number | null;
  /** The earliest per-ticket retry back-off that ends after now (epoch ms), or null. */
  nextRetryAt: number | null;
}

/** The history of a mirror that has seen nothing yet. */
export function emptyHistory(): PlannerHistory {
  return {
    changes: new Array<number>(HISTORY_BUCKETS).fill(0),
    firstPollAt: null,
    pollsLastDay: 0,
    freeing: new Array<number>(HOURS_AHEAD).fill(0),
    sentThisHour: 0,
    backgroundThisHour: 0,
    nextExpiryAt: null,
    nextRetryAt: null,
  };
}

/**
 * The requests in the rolling window as the planner counts them (`freeing`, `sentThisHour`, `nextExpiryAt`), from the
 * instants they were sent: the very requests the budget counts (sync/gate.ts, those in flight included; `status` reads
 * them from the ledger, db/repos/ledger.ts), so that the plan and the budget never disagree on what was spent; and
 * `backgroundThisHour` from those of them that were background (`backgroundAt`, a subset of `sentAt`). An
 * instant outside (now − 24 h, now] is not counted. (Counted in SQL before, this was the largest part of the
 * database's work on a large budget, 39 of 104 s in a quick `abundant` bench run: every plan grouped the whole day of
 * `api_requests` by hour.)
 */
export function requestUsage(
  sentAt: Iterable<number>,
  now: number,
  backgroundAt: Iterable<number> = [],
): Pick<PlannerHistory, 'freeing' | 'sentThisHour' | 'backgroundThisHour' | 'nextExpiryAt'> {
  const hourNow = Math.floor(now / HOUR_MS);
  const freeing = new Array<number>(HOURS_AHEAD).fill(0);
  let sentThisHour = 0;
  let oldest = Infinity;
  for (const at of sentAt) {
    if (!(at > now - DAY_MS && at <= now)) continue;
    const hour = Math.floor(at / HOUR_MS);
    if (hour === hourNow) sentThisHour++;
    // A request of clock hour H − 24 leaves the window in clock hour H.
    freeing[Math.min(HOURS_AHEAD - 1, Math.max(0, hour + DAY_MS / HOUR_MS - hourNow))]!++;
    oldest = Math.min(oldest, at);
  }
  let backgroundThisHour = 0;
  for (const at of backgroundAt) if (at <= now && Math.floor(at / HOUR_MS) === hourNow) backgroundThisHour++;
  // Sent at `oldest`, it no longer counts from `oldest + 24 h` on (the budget's rolling window).
  return { freeing, sentThisHour, backgroundThisHour, nextExpiryAt: oldest === Infinity ? null : oldest + DAY_MS };
}
