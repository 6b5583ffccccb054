import { DEFAULT_RATES_PER_DAY, type ActivityRates } from '../src/simulator/index.ts';
import type { BudgetLimits } from '../src/sync/budget.ts';
import { HOUR_MS } from '../src/time.ts';

/**
 * The benchmark's workloads. Everything a run depends on is here and seeded: the same workload gives the same
 * dataset, the same mutations at the same virtual instants, for every strategy and every run.
 */
export type WorkloadName = 'small' | 'standard' | 'large' | 'abundant';

export interface Workload {
  name: WorkloadName;
  /** A `--quick` run: a tenth of the data and of the activity, one day (a smoke test). */
  quick?: boolean;
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
  /** Hours of further quiet in which the mirror is checked hourly until exact. @default MAX_QUIET_HOURS (48) */
  quietCheckHours?: number;
  limits: BudgetLimits;
  /**
   * Mutations follow one another on the same ticket (bursts of messages, replies after inbound messages, priorities
   * after assignments: the activity driver's `correlated`) instead of picking tickets at random. `--correlated`.
   */
  correlated?: boolean;
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

/**
 * A small helpdesk on the same quota: 40 open and 400 resolved tickets, about 60 mutations a weekday (the standard mix
 * at 6 %). The budget is far larger than the work: every lag should be minutes. A week: the backfill takes hours.
 */
export const SMALL: Workload = {
  ...STANDARD,
  name: 'small',
  openTickets: 40,
  resolvedTickets: 400,
  ratesPerDay: scaleRates(DEFAULT_RATES_PER_DAY, 0.06),
  days: 7,
};

/**
 * Demand far above the quota: 3,000 open and 60,000 resolved tickets, about 5,000 mutations a weekday (the standard mix
 * at 5×). The backfill alone would take 49 days of the whole allowance, so it never completes here: the run shows how
 * freshness degrades and that live work (polls, details the lists ask for) keeps its priority over the backfill.
 */
export const LARGE: Workload = {
  ...STANDARD,
  name: 'large',
  openTickets: 3_000,
  resolvedTickets: 60_000,
  ratesPerDay: scaleRates(DEFAULT_RATES_PER_DAY, 5),
  days: 7,
};

/**
 * The standard workload with a token of ten times the limits (14,400 a day, 600 a minute): a budget larger than the
 * work, which should be spent on freshness up to the point where re-reading buys nothing. The backfill takes hours.
 */
export const ABUNDANT: Workload = {
  ...STANDARD,
  name: 'abundant',
  days: 5,
  limits: { daily: 14_400, minute: 600, reserve: 0.1 },
};

export const WORKLOADS: Record<WorkloadName, Workload> = { small: SMALL, standard: STANDARD, large: LARGE, abundant: ABUNDANT };

/**
 * A workload's `--quick` form, a smoke test of seconds: a tenth of its data and activity (a twentieth for `large`), one
 * weekday (six hours for `abundant`, whose backfill takes one), at most 6 quiet hours to become exact.
 */
export function quickOf(w: Workload): Workload {
  const scale = w.name === 'large' ? 20 : 10;
  return {
    ...w,
    quick: true,
    openTickets: Math.max(10, Math.round(w.openTickets / scale)),
    resolvedTickets: Math.max(50, Math.round(w.resolvedTickets / scale)),
    ratesPerDay: scaleRates(w.ratesPerDay, 1 / scale),
    days: w.name === 'abundant' ? 0.25 : 1,
    quietCheckHours: 6,
  };
}

export function workloadNamed(name: string, quick: boolean): Workload {
  const w = WORKLOADS[name as WorkloadName];
  if (!w) throw new Error(`unknown workload ${JSON.stringify(name)}: one of ${Object.keys(WORKLOADS).join(', ')}`);
  return quick ? quickOf(w) : w;
}

function scaleRates(rates: Readonly<ActivityRates>, factor: number): ActivityRates {
  return Object.fromEntries(Object.entries(rates).map(([op, n]) => [op, n * factor])) as ActivityRates;
}

export function activityEnd(w: Workload): number {
  return w.start + w.days * 24 * HOUR_MS;
}

export function runEnd(w: Workload): number {
  return activityEnd(w) + w.quietMs;
}
