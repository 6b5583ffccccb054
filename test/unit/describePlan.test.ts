import { describe, expect, it } from 'vitest';
import { describePlan } from '../../src/daemon/describePlan.ts';
import type { Plan } from '../../src/sync/planner.ts';

const plan = {
  polls: [],
  sweep: false,
  due: 0,
  backfill: 0,
  revalidate: 0,
  sweepMinutes: 6,
  daily: { allowed: 1296, polls: 870, liveDetails: 200, askedDetails: 200, background: 226 },
} as unknown as Plan;

describe('describePlan', () => {
  it('says the plan in plain words, with the reserve and the backfill ETA', () => {
    expect(describePlan(plan, { backfill: 5000, reserve: 0.1 })).toBe(
      "plan: all four lists every 6 min at this hour's activity (more often when busy); " +
        'of 1296 requests a day: about 870 list polls, 200 details for changes, 226 for backfill and revalidation; ' +
        '10% reserved for other clients of the token; backfill of 5000 tickets: about 22 days',
    );
  });

  it('says how often the probes go between sweeps, when they pay', () => {
    expect(describePlan({ ...plan, probeMinutes: 2.5 })).toMatch(
      /^plan: all four lists every 6 min at this hour's activity \(more often when busy\), open and unassigned every 2\.5 min between sweeps \(the other two at once when they show a change\); of 1296/,
    );
  });

  it('says when the activity asks for more details than the allowance pays', () => {
    const overloaded = { ...plan, daily: { allowed: 1296, polls: 194, liveDetails: 918, askedDetails: 2388, background: 184 } } as Plan;
    expect(describePlan(overloaded)).toContain(
      'of 1296 requests a day: about 194 list polls, 918 details for changes (the activity asks for about 2388, more than the allowance pays: the rest wait their turn), 184 for backfill and revalidation',
    );
  });

  it('leaves the backfill out once it is done', () => {
    expect(describePlan(plan, { backfill: 0 })).not.toMatch(/backfill of/);
  });
});
