import { describe, expect, it } from 'vitest';
import { LIST_NAMES, type ListName } from '../../src/api/endpoints.ts';
import { budgetAt } from '../../src/sync/budget.ts';
import { planPass, pollIntervals, pollsPerDayOf, POLICY, type ListState, type PlannerInput } from '../../src/sync/planner.ts';

const T0 = Date.UTC(2026, 0, 5, 12, 0, 0);
const limits = { daily: 1440, minute: 60, reserve: 0.1 };

function lists(lastPolledAt: number | null, rates: Partial<Record<ListName, number>> = {}): Record<ListName, ListState> {
  return Object.fromEntries(LIST_NAMES.map((l) => [l, { lastPolledAt, changesPerHour: rates[l] ?? 0 }])) as Record<ListName, ListState>;
}

function input(over: Partial<PlannerInput> = {}): PlannerInput {
  return {
    now: T0,
    budget: budgetAt(limits, [], T0),
    lists: lists(T0 - 60_000),
    dueCount: 0,
    backfillCount: 0,
    liveDetailsLastDay: 0,
    backgroundLastDay: 0,
    backgroundLastHour: 0,
    ...over,
  };
}

describe('pollIntervals (square-root law)', () => {
  it('spends the poll budget it is given, within the clamps', () => {
    const intervals = pollIntervals(400, lists(null, { open: 10, self: 1, unassigned: 1, resolved: 0.5 }));
    expect(pollsPerDayOf(intervals)).toBeCloseTo(400, -1);
    for (const l of LIST_NAMES) {
      expect(intervals[l]).toBeGreaterThanOrEqual(POLICY.minIntervalMin[l]);
      expect(intervals[l]).toBeLessThanOrEqual(POLICY.maxIntervalMin[l]);
    }
  });

  it('polls a list that changes 4× as often twice as often', () => {
    const i = pollIntervals(300, lists(null, { self: 4, unassigned: 1 }));
    expect(i.unassigned / i.self).toBeCloseTo(2, 5);
  });
});

describe('planPass', () => {
  it('polls every list on the first pass, as a sweep', () => {
    const plan = planPass(input({ lists: lists(null) }));
    expect(plan.polls).toEqual([...LIST_NAMES]);
    expect(plan.sweep).toBe(true);
  });

  it('polls nothing that is not due', () => {
    const plan = planPass(input({ lists: lists(T0 - 10_000) }));
    expect(plan.polls).toEqual([]);
  });

  it('fetches due details before background work, within the minute', () => {
    const plan = planPass(input({ dueCount: 100, backfillCount: 5000 }));
    expect(plan.due).toBeGreaterThan(0);
    expect(plan.due + plan.backfill + plan.revalidate).toBeLessThanOrEqual(54);
  });

  it('paces background work: none beyond its hourly share', () => {
    const plan = planPass(input({ backfillCount: 5000, backgroundLastHour: 10_000 }));
    expect(plan.backfill).toBe(0);
    const fresh = planPass(input({ backfillCount: 5000 }));
    expect(fresh.backfill).toBeGreaterThan(0);
  });

  it('keeps at least the guaranteed share for the backfill even when live demand is high', () => {
    const plan = planPass(input({ backfillCount: 5000, liveDetailsLastDay: 5000 }));
    expect(plan.daily.background).toBeGreaterThanOrEqual(Math.floor(1296 * POLICY.minBackgroundShareBackfill));
  });

  it('keeps the coming hours of polls from the details lists asked for', () => {
    // 1,200 of 1,296 spent: the polls of the next 6 hours need more than the 96 left.
    const samples = Array.from({ length: 1200 }, (_, i) => ({ at: T0 - 20 * 3_600_000 + i * 1000, remaining: null, limit: null }));
    const plan = planPass(input({ budget: budgetAt(limits, samples, T0), dueCount: 500 }));
    expect(plan.due).toBe(0);
    const early = planPass(input({ dueCount: 500 }));
    expect(early.due).toBeGreaterThan(0);
  });

  it('requests nothing when the daily budget is spent', () => {
    const samples = Array.from({ length: 1296 }, (_, i) => ({ at: T0 - 3_600_000 + i * 1000, remaining: null, limit: null }));
    const plan = planPass(input({ budget: budgetAt(limits, samples, T0), lists: lists(null), dueCount: 10, backfillCount: 10 }));
    expect(plan.polls.length + plan.due + plan.backfill + plan.revalidate).toBe(0);
  });
});
