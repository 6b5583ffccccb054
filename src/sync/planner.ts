import { LIST_NAMES, type ListName } from '../api/endpoints.ts';
import { DAY_MS, MINUTE_MS, type BudgetSnapshot } from './budget.ts';

/**
 * The planner: a pure function of (mirror state, budget, now) that decides what the next pass requests.
 *
 * ## The arithmetic of the quota
 * 1,440 requests a day, 10 % reserved for other clients of the token, leaves A = 1,296 a day: 0.9 a minute. Lists
 * carry no `updated_at`, so the mirror learns of changes by polling them, and of everything else by re-reading
 * details. Every request has to be placed where it buys the most freshness:
 *
 * 1. **List polls** (live). A list-visible change waits on average half a poll interval. Given a daily poll budget P,
 *    the intervals that minimise the total expected lag are T_i ∝ 1/√λ_i, where λ_i is the rate at which list i has
 *    been showing changes (the square-root law of polling). P is a share of A: 30 % while the backfill runs, 45 %
 *    afterwards; each list's interval is clamped to a floor and a ceiling. The resolved list is polled together with
 *    the other three (a *sweep*): only a sweep may call a ticket missing, because only then has every list been seen
 *    at one moment.
 * 2. **Details a list asked for** (live): a new ticket, a changed status or unread flag, a ticket joining or leaving a
 *    list. Fetched right away, oldest first — except from the slots the next 6 hours of polls need: when changes
 *    outrun the budget, details queue up and the lists keep being watched.
 * 3. **Backfill** (background): never-fetched tickets, open before resolved, newest first.
 * 4. **Revalidation** (background): details whose changes no list shows (a reply by another agent on a read
 *    ticket, a priority change): the stalest, most recently active first.
 *
 * Background work gets what live work will not need: A − H, where H is the live demand of a day (the polls of 1., plus
 * the details of 2. as observed over the last 24 h, with a 20 % margin); at least 20 % of A while the backfill runs.
 * It is paced — at most 1.5× its hourly share in any hour — so the window fills evenly and live work always finds room.
 */

export const POLICY = {
  /** Share of the daily allowance for list polls while never-fetched tickets remain, and afterwards. */
  pollShareBackfill: 0.3,
  pollShareSteady: 0.45,
  /** Floor and ceiling of each list's poll interval, minutes. */
  minIntervalMin: { open: 1, self: 2, unassigned: 2, resolved: 30 } as Record<ListName, number>,
  maxIntervalMin: { open: 15, self: 60, unassigned: 60, resolved: 360 } as Record<ListName, number>,
  /** Changes per hour assumed for a list before it has shown any (keeps a quiet list polled). */
  priorRatePerHour: { open: 2, self: 0.5, unassigned: 0.5, resolved: 0.25 } as Record<ListName, number>,
  /** Margin on the observed live detail demand. */
  liveMargin: 1.2,
  /** Background share guaranteed while the backfill runs. */
  minBackgroundShareBackfill: 0.2,
  /** Background may use at most this multiple of its hourly share in any hour. */
  backgroundHourlyBurst: 1.5,
  /** Details a list asked for never take the slots the polls of this many coming hours need. */
  pollReserveHours: 6,
} as const;

export interface ListState {
  /** Last successful poll (epoch ms), or null. */
  lastPolledAt: number | null;
  /** List-visible changes per hour seen recently. */
  changesPerHour: number;
}

export interface PlannerInput {
  now: number;
  budget: BudgetSnapshot;
  lists: Record<ListName, ListState>;
  /** Tickets whose detail a list asked for, fetchable now. */
  dueCount: number;
  /** Never-fetched tickets, fetchable now. */
  backfillCount: number;
  /** Details fetched because a list asked for them, in the last 24 h. */
  liveDetailsLastDay: number;
  /** Background requests (backfill + revalidation) in the last 24 h and the last hour. */
  backgroundLastDay: number;
  backgroundLastHour: number;
}

export interface Plan {
  polls: ListName[];
  /** True when the polls cover all four lists: a sweep, after which absent tickets are missing. */
  sweep: boolean;
  due: number;
  backfill: number;
  revalidate: number;
  /** Poll interval of each list, minutes. */
  intervals: Record<ListName, number>;
  /** Daily figures behind the decision, for the start-up log and `status`. */
  daily: { allowed: number; polls: number; liveDetails: number; background: number };
}

export function pollIntervals(pollsPerDay: number, lists: Record<ListName, ListState>): Record<ListName, number> {
  const rates = LIST_NAMES.map((l) => Math.max(lists[l].changesPerHour, POLICY.priorRatePerHour[l]));
  const sumSqrt = rates.reduce((s, r) => s + Math.sqrt(r), 0);
  const c = (1440 * sumSqrt) / Math.max(1, pollsPerDay);
  const out = {} as Record<ListName, number>;
  LIST_NAMES.forEach((l, i) => {
    const t = c / Math.sqrt(rates[i]!);
    out[l] = Math.min(POLICY.maxIntervalMin[l], Math.max(POLICY.minIntervalMin[l], t));
  });
  return out;
}

export function pollsPerDayOf(intervals: Record<ListName, number>): number {
  return LIST_NAMES.reduce((s, l) => s + 1440 / intervals[l], 0);
}

export function planPass(input: PlannerInput): Plan {
  const { now, budget } = input;
  const A = budget.dailyAllowed;
  const backfilling = input.backfillCount > 0;
  const pollBudget = A * (backfilling ? POLICY.pollShareBackfill : POLICY.pollShareSteady);
  const intervals = pollIntervals(pollBudget, input.lists);
  const pollsPerDay = pollsPerDayOf(intervals);

  // 1. Polls due by their interval; when the resolved list is due, a sweep of all four.
  const due = LIST_NAMES.filter((l) => {
    const last = input.lists[l].lastPolledAt;
    return last === null || now - last >= intervals[l] * MINUTE_MS - 1_000;
  });
  const sweep = due.includes('resolved');
  let polls: ListName[] = sweep ? [...LIST_NAMES] : due;

  let minuteLeft = budget.minuteLeft;
  let dailyLeft = budget.dailyLeft;
  polls = polls.slice(0, Math.max(0, Math.min(minuteLeft, dailyLeft)));
  minuteLeft -= polls.length;
  dailyLeft -= polls.length;

  // 3 & 4. Background allowance: what live work will not need, paced by the hour.
  const liveDetails = input.liveDetailsLastDay * POLICY.liveMargin;
  const live = pollsPerDay + liveDetails;
  const backgroundPerDay = Math.max(A - live, backfilling ? A * POLICY.minBackgroundShareBackfill : 0);
  const backgroundLeft = Math.min(
    backgroundPerDay - input.backgroundLastDay,
    (backgroundPerDay / 24) * POLICY.backgroundHourlyBurst - input.backgroundLastHour,
  );
  // The background share not yet used today is kept from live details while the backfill runs.
  const keepForBackground = backfilling ? Math.max(0, A * POLICY.minBackgroundShareBackfill - input.backgroundLastDay) : 0;

  // 2. Details lists asked for — but never the slots the coming hours' polls need: without polls, no change is seen.
  const pollReserve = Math.ceil((pollsPerDay * POLICY.pollReserveHours) / 24);
  const dueDetails = Math.max(0, Math.min(input.dueCount, minuteLeft, dailyLeft - Math.floor(keepForBackground) - pollReserve));
  minuteLeft -= dueDetails;
  dailyLeft -= dueDetails;

  const background = Math.max(0, Math.min(Math.floor(backgroundLeft), minuteLeft, dailyLeft));
  const backfill = Math.min(background, input.backfillCount);
  const revalidate = background - backfill;
  return {
    polls,
    sweep: sweep && polls.length === LIST_NAMES.length,
    due: dueDetails,
    backfill,
    revalidate,
    intervals,
    daily: { allowed: A, polls: Math.round(pollsPerDay), liveDetails: Math.round(liveDetails), background: Math.round(backgroundPerDay) },
  };
}

/** Days the backfill needs at the given daily background allowance. */
export function backfillEtaMs(remaining: number, backgroundPerDay: number): number | null {
  if (remaining === 0) return 0;
  if (backgroundPerDay <= 0) return null;
  return (remaining / backgroundPerDay) * DAY_MS;
}
