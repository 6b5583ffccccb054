import { DEFAULT_RATES_PER_DAY, type ActivityRates } from '../src/simulator/index.ts';
import type { BudgetLimits } from '../src/sync/budget.ts';
import { HOUR_MS } from '../src/time.ts';

/**
 * The benchmark's workloads. Everything a run depends on is here and seeded: the same workload gives the same
 * dataset, the same mutations at the same virtual instants, for every strategy and every run.
 */
export interface Workload {
  name: 'standard' | 'quick';
  /** Seed of the simulator's dataset (and of the model's own choices while mutating). */
  seed: number;
  /** Seed of the activity driver's arrival process. */
  activitySeed: number;
  /** Virtual start (epoch ms). A Monday 00:00 UTC: working hours are 08–18 UTC, Monday to Friday. */
  start: number;
  openTickets: number;
  resolvedTickets: number;
  /** Mutations per weekday (a weekend day sees about a ninth; nights a twentieth of the working-hours rate). */
  ratesPerDay: ActivityRates;
  /** Days of activity. */
  days: number;
  /** Quiet time after the activity stops, before the mirror is compared with the ground truth. */
  quietMs: number;
  limits: BudgetLimits;
}

const MONDAY = Date.UTC(2026, 0, 5, 0, 0, 0);

/**
 * The standard workload of the issue: 500 open and 5,000 resolved tickets (2–10 messages each, a third with
 * attachments; open ones assigned 30 % to the token's user, 35 % to other agents, 35 % unassigned), an empty mirror,
 * and each weekday about 150 new tickets, 400 inbound messages, 200 replies by other agents, 120 resolutions,
 * 15 reopens, 100 assignment changes, 20 priority changes and 5 deletions.
 *
 * Ten days: the backfill of 5,500 tickets needs most of the first week whatever the policy (the whole allowance of
 * 1,296 requests a day would take 4.2 days on its own), so a steady state exists only in the second week.
 */
export const STANDARD: Workload = {
  name: 'standard',
  seed: 42,
  activitySeed: 7,
  start: MONDAY,
  openTickets: 500,
  resolvedTickets: 5_000,
  ratesPerDay: { ...DEFAULT_RATES_PER_DAY },
  days: 14,
  quietMs: HOUR_MS,
  limits: { daily: 1_440, minute: 60, reserve: 0.1 },
};

/** One weekday, a tenth of the data and of the activity: a smoke test that runs in well under a minute. */
export const QUICK: Workload = {
  ...STANDARD,
  name: 'quick',
  openTickets: 50,
  resolvedTickets: 500,
  ratesPerDay: scaleRates(DEFAULT_RATES_PER_DAY, 0.1),
  days: 1,
};

function scaleRates(rates: Readonly<ActivityRates>, factor: number): ActivityRates {
  return Object.fromEntries(Object.entries(rates).map(([op, n]) => [op, n * factor])) as ActivityRates;
}

export function activityEnd(w: Workload): number {
  return w.start + w.days * 24 * HOUR_MS;
}

export function runEnd(w: Workload): number {
  return activityEnd(w) + w.quietMs;
}
