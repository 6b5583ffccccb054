import { LIST_PATHS } from '../src/api/endpoints.ts';
import { allowedPerDay } from '../src/sync/budget.ts';
import { DAY_MS, HOUR_MS } from '../src/time.ts';
import type { Window } from './bound.ts';
import type { Exactness } from './exactness.ts';
import type { ObservedChange } from './lagTracker.ts';
import { countBetween, lagStats, maxInWindow, quantile, type LagStats } from './stats.ts';
import type { StrategyName } from './strategies/strategy.ts';
import type { VirtualRun } from './virtualRun.ts';
import { activityEnd, runEnd, type Workload } from './workload.ts';

/** The figures of one strategy's run, as reported. Durations in ms, instants as ms since the run's start. */
export interface StrategySummary {
  strategy: StrategyName;
  /** Average requests per simulated day, by purpose (the quiet final hour included in the days). */
  perDay: Record<string, number>;
  /** The same, day by day. */
  requestsPerDay: Array<Record<string, number>>;
  sent: number;
  /** 429 answers received. */
  throttled: number;
  /** Most requests sent in any rolling 24 h, and of those the ones the service accepted. */
  maxRolling24h: { sent: number; accepted: number };
  /** When the last ticket of the starting dataset was first stored; null: never. */
  backfillDoneMs: number | null;
  /** Requests sent while the backfill ran, over what the allowance permitted in that time. */
  backfillUtilisation: number;
  lags: {
    /** Changes made during the whole run. */
    whole: LagSet;
    /** Changes made after ticket-mirror's backfill was complete (the same window for every strategy). */
    steady: LagSet | null;
  };
  /**
   * By kind of mutation, after the backfill (or over the whole run without one): how many, how many were
   * list-visible, the lag until the mirror showed what the lists show (list-visible ones), and until a detail fetched
   * after the change was stored (all of them: the full content).
   */
  byKind: Array<{ op: string; n: number; listVisible: number; list: LagStats; content: LagStats }>;
  exactness: Exactness;
  /** Hours of quiet after which the mirror first equalled the truth (see VirtualRun), or null. */
  exactAfterQuietHours: number | null;
  /** For the chart: per hour of activity, by when the changes were made. */
  hourly: { listP95: Array<number | null>; detailP50: Array<number | null> };
  /** List polls and detail requests per 24 h block of the steady window (for the conditional bounds). */
  steadyBlocks: { polls: number[]; details: number[] } | null;
  wallSeconds: number;
}

export interface LagSet {
  /** List-visible changes: until the lists they changed were polled. */
  list: LagStats;
  /** List-visible changes: until a detail fetched after them was stored (their full content). */
  listContent: LagStats;
  /** Detail-only changes: until a detail fetched after them was stored. */
  detail: LagStats;
}

export function summarize(run: VirtualRun, w: Workload, steady: Window | null): StrategySummary {
  const days = (runEnd(w) - w.start) / DAY_MS;
  const sentAt = run.requests.map((r) => r.at);
  const acceptedAt = run.requests.filter((r) => r.status !== 429).map((r) => r.at);
  const backfillEnd = run.backfillDoneAt ?? runEnd(w);
  const allowed = allowedPerDay(w.limits);
  return {
    strategy: run.strategy,
    perDay: Object.fromEntries(Object.entries(totals(run.requestsPerDay)).map(([k, n]) => [k, n / days])),
    requestsPerDay: run.requestsPerDay,
    sent: run.requests.length,
    throttled: run.requests.length - acceptedAt.length,
    maxRolling24h: { sent: maxInWindow(sentAt, DAY_MS), accepted: maxInWindow(acceptedAt, DAY_MS) },
    backfillDoneMs: run.backfillDoneAt === null ? null : run.backfillDoneAt - w.start,
    backfillUtilisation: countBetween(sentAt, w.start, backfillEnd + 1) / ((allowed * Math.max(backfillEnd - w.start, 1)) / DAY_MS),
    lags: {
      whole: lagSet(run.changes, { from: w.start, to: activityEnd(w) }),
      steady: steady ? lagSet(run.changes, steady) : null,
    },
    byKind: byKind(run.changes, steady ?? { from: w.start, to: activityEnd(w) }),
    exactness: run.exactness,
    exactAfterQuietHours: run.exactAfterQuietHours,
    hourly: hourly(run.changes, w),
    steadyBlocks: steady ? blocks(run, steady) : null,
    wallSeconds: run.wallSeconds,
  };
}

function totals(days: ReadonlyArray<Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const day of days) for (const [k, n] of Object.entries(day)) out[k] = (out[k] ?? 0) + n;
  return out;
}

function lagSet(changes: readonly ObservedChange[], window: Window): LagSet {
  const inWindow = changes.filter((c) => c.at >= window.from && c.at < window.to);
  const list = inWindow.filter((c) => c.cls === 'list');
  return {
    list: lagStats(list.map((c) => c.listLagMs)),
    listContent: lagStats(list.map((c) => c.detailLagMs)),
    detail: lagStats(inWindow.filter((c) => c.cls === 'detail').map((c) => c.detailLagMs)),
  };
}

function byKind(changes: readonly ObservedChange[], window: Window): StrategySummary['byKind'] {
  const ops = new Map<string, ObservedChange[]>();
  for (const c of changes) {
    if (c.at < window.from || c.at >= window.to) continue;
    const list = ops.get(c.op);
    if (list) list.push(c);
    else ops.set(c.op, [c]);
  }
  return [...ops].map(([op, cs]) => {
    const visible = cs.filter((c) => c.cls === 'list');
    return { op, n: cs.length, listVisible: visible.length, list: lagStats(visible.map((c) => c.listLagMs)), content: lagStats(cs.map((c) => c.detailLagMs)) };
  });
}

function hourly(changes: readonly ObservedChange[], w: Workload): StrategySummary['hourly'] {
  const hours = Math.ceil((activityEnd(w) - w.start) / HOUR_MS);
  const list: Array<Array<number | null>> = Array.from({ length: hours }, () => []);
  const detail: Array<Array<number | null>> = Array.from({ length: hours }, () => []);
  for (const c of changes) {
    const h = Math.min(hours - 1, Math.floor((c.at - w.start) / HOUR_MS));
    if (c.cls === 'list') list[h]!.push(c.listLagMs);
    else detail[h]!.push(c.detailLagMs);
  }
  const q = (lags: Array<number | null>, p: number) => (lags.length === 0 ? null : (quantile(lags, p) ?? Infinity));
  return { listP95: list.map((l) => q(l, 0.95)), detailP50: detail.map((l) => q(l, 0.5)) };
}

function blocks(run: VirtualRun, window: Window): { polls: number[]; details: number[] } {
  const n = Math.max(1, Math.ceil((window.to - window.from) / DAY_MS));
  const polls = new Array<number>(n).fill(0);
  const details = new Array<number>(n).fill(0);
  const listPaths = new Set(Object.values(LIST_PATHS));
  for (const r of run.requests) {
    if (r.at < window.from || r.at >= window.to) continue;
    const b = Math.floor((r.at - window.from) / DAY_MS);
    if (listPaths.has(r.path)) polls[b]!++;
    else details[b]!++;
  }
  return { polls, details };
}
