import { describe, expect, it } from 'vitest';
import { describePlan } from '../../src/daemon/describePlan.ts';
import type { Plan } from '../../src/sync/planner.ts';

const plan = {
  polls: [],
  sweep: false,
  due: 0,
  backfill: 0,
  revalidate: 0,
  intervals: { open: 2, self: 20, unassigned: 20, resolved: 240 },
  daily: { allowed: 1296, polls: 870, liveDetails: 200, background: 226 },
} as unknown as Plan;

describe('describePlan', () => {
  it('says the plan in plain words, with the reserve and the backfill ETA', () => {
    expect(describePlan(plan, { backfill: 5000, reserve: 0.1 })).toBe(
      'plan: open list every 2 min, self list every 20 min, unassigned every 20 min, resolved (full sweep) every 4 h; ' +
        'of 1296 requests a day: about 870 list polls, 200 details for changes, 226 for backfill and revalidation; ' +
        '10% reserved for other clients of the token; backfill of 5000 tickets: about 22 days',
    );
  });

  it('leaves the backfill out once it is done', () => {
    expect(describePlan(plan, { backfill: 0 })).not.toMatch(/backfill of/);
  });
});
