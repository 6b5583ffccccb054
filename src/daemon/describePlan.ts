import { backfillEtaMs, type Plan } from '../sync/planner.ts';
import { DAY_MS, HOUR_MS } from '../time.ts';

/**
 * The plan in plain words, for the start-up log and the status page, e.g. "all four lists every 6 min at this hour's
 * activity, open and unassigned every 3 min between sweeps …; of 1296 requests a day: about 450 list polls, …; 10% reserved; backfill of 5000 tickets: about 6 days".
 */
export function describePlan(plan: Plan, context: { backfill?: number; reserve?: number } = {}): string {
  const every = (min: number) => (min < 60 ? `${round(min)} min` : `${round(min / 60)} h`);
  return (
    `plan: all four lists every ${every(plan.sweepMinutes)} at this hour's activity (more often when busy)` +
    (plan.probeMinutes != null
      ? `, open and unassigned every ${every(plan.probeMinutes)} between sweeps (the other two at once when they show a change)`
      : '') +
    '; ' +
    `of ${plan.daily.allowed} requests a day: about ${plan.daily.polls} list polls, ${plan.daily.liveDetails} details for changes` +
    (plan.daily.askedDetails > plan.daily.liveDetails
      ? ` (the activity asks for about ${plan.daily.askedDetails}, more than the allowance pays: the rest wait their turn)`
      : '') +
    ', ' +
    `${plan.daily.background} for backfill and revalidation` +
    (context.reserve !== undefined ? `; ${Math.round(context.reserve * 100)}% reserved for other clients of the token` : '') +
    (context.backfill ? `; backfill of ${context.backfill} tickets: ${eta(backfillEtaMs(context.backfill, plan.daily.background))}` : '')
  );
}

function eta(ms: number | null): string {
  if (ms === null) return 'waiting for budget';
  return ms < 2 * DAY_MS ? `about ${round(ms / HOUR_MS)} h` : `about ${round(ms / DAY_MS)} days`;
}

function round(n: number): string {
  return n >= 10 ? String(Math.round(n)) : n.toFixed(1).replace(/\.0$/, '');
}
