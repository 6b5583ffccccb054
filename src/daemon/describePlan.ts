import type { Plan } from '../sync/planner.ts';

/** The plan in plain words, for the start-up log and `status`. */
export function describePlan(plan: Plan): string {
  const every = (min: number) => (min < 60 ? `${round(min)} min` : `${round(min / 60)} h`);
  const i = plan.intervals;
  const others = `self list every ${every(i.self)}, unassigned every ${every(i.unassigned)}, resolved (full sweep) every ${every(i.resolved)}`;
  return (
    `plan: open list every ${every(i.open)}, ${others}; ` +
    `of ${plan.daily.allowed} requests a day: about ${plan.daily.polls} list polls, ${plan.daily.liveDetails} details for changes, ` +
    `${plan.daily.background} for backfill and revalidation`
  );
}

function round(n: number): string {
  return n >= 10 ? String(Math.round(n)) : n.toFixed(1).replace(/\.0$/, '');
}
