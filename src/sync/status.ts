import type { Config } from '../config/loadConfig.ts';
import type { Db } from '../db/connect.ts';
import { loadSamples } from '../db/repos/ledger.ts';
import { safeText } from '../logger.ts';
import { lastRun } from '../db/repos/runs.ts';
import { rowCounts, ticketCounts } from '../db/repos/status.ts';
import { plannerInputs, type ListActivity } from '../db/repos/work.ts';
import { canonicalTimestamp, DAY_MS, HOUR_MS } from '../time.ts';
import { budgetAt, type BudgetSnapshot } from './budget.ts';
import { backfillEtaMs, planPass, type Plan } from './planner.ts';
import { isBackgroundKind, LIST_NAMES, type ListName } from '../api/endpoints.ts';
import { emptyHistory } from '../model/plannerHistory.ts';

/** Everything `status` (and the status page) shows, read from the database alone: no request is made. */
export interface MirrorStatus {
  now: string;
  budget: BudgetSnapshot;
  plan: Plan;
  lastSync: { startedAt: string; finishedAt: string | null; requests: number; detailsFetched: number; error: string | null } | null;
  lastPolls: Record<ListName, string | null>;
  counts: {
    tickets: number;
    open: number;
    self: number;
    unassigned: number;
    resolved: number;
    missing: number;
    deleted: number;
    messages: number;
    attachments: number;
    outboxPending: number;
    outboxFailed: number;
  };
  backfill: { fetched: number; total: number; remaining: number; etaHours: number | null };
  freshness: { detailsDue: number; oldestDueSince: string | null; oldestOpenDetail: string | null; medianOpenDetailAgeMinutes: number | null };
  /** Set when there is no mirror yet (see emptyStatus): why, and what creates it. */
  none?: string;
}

/**
 * The mirror's status at `now`, with the plan a pass would follow. `activity` keeps the lists' activity between calls
 * (see ListActivity: the status server's scrapes, every few seconds); without it the eight days are read whole.
 */
export async function mirrorStatus(
  db: Db,
  config: Pick<Config, 'dailyLimit' | 'minuteLimit' | 'reserve'>,
  now: number,
  activity?: ListActivity,
): Promise<MirrorStatus> {
  const limits = { daily: config.dailyLimit, minute: config.minuteLimit, reserve: config.reserve };
  const samples = await loadSamples(db, now - DAY_MS, { minute: config.minuteLimit, daily: config.dailyLimit });
  const { lists, work, history } = await plannerInputs(
    db,
    now,
    samples.map((s) => s.at),
    samples.filter((s) => isBackgroundKind(s.kind)).map((s) => s.at),
    activity,
  );
  const budget = budgetAt(limits, samples, now);
  const plan = planPass({ now, budget, lists, dueCount: work.due, backfillCount: work.backfill, openCount: work.open, oldestDetailAt: work.oldestDetailAt, oldestOpenDetailAt: work.oldestOpenDetailAt, history });
  const [c, m, run] = await Promise.all([ticketCounts(db, now), rowCounts(db), lastRun(db, now)]);
  const ts = (v: unknown) => (typeof v === 'string' ? canonicalTimestamp(v) : null);
  const total = Number(c.live);
  const remaining = work.backfill;
  const eta = backfillEtaMs(remaining, plan.daily.background);
  const lastPolls = {} as Record<ListName, string | null>;
  for (const [list, state] of Object.entries(lists) as Array<[ListName, { lastPolledAt: number | null }]>) {
    lastPolls[list] = state.lastPolledAt === null ? null : new Date(state.lastPolledAt).toISOString();
  }
  return {
    now: new Date(now).toISOString(),
    budget,
    plan,
    lastSync: run
      ? {
          startedAt: ts(run.started_at)!,
          finishedAt: ts(run.finished_at),
          requests: run.requests,
          detailsFetched: run.details_fetched,
          // sync_runs is the user's table too: its text reaches a terminal, so no escape sequence.
          error: run.error === null ? null : safeText(run.error),
        }
      : null,
    lastPolls,
    counts: {
      tickets: Number(c.tickets),
      open: Number(c.open),
      self: Number(c.self),
      unassigned: Number(c.unassigned),
      resolved: Number(c.resolved),
      missing: Number(c.missing),
      deleted: Number(c.deleted),
      messages: m.messages,
      attachments: m.attachments,
      outboxPending: m.pending,
      outboxFailed: m.failed,
    },
    backfill: { fetched: Number(c.fetched), total, remaining, etaHours: eta === null ? null : Math.round((eta / HOUR_MS) * 10) / 10 },
    freshness: {
      detailsDue: Number(c.due),
      oldestDueSince: ts(c.oldest_due),
      oldestOpenDetail: ts(c.oldest_open),
      medianOpenDetailAgeMinutes: c.median_open_age === null ? null : Math.round(Number(c.median_open_age)),
    },
  };
}

/**
 * The status of a mirror that does not exist yet (no embedded database, or a database without ticket-mirror's tables):
 * the whole budget, nothing synced, nothing mirrored — what `run` or `sync` would start from — with `none` saying why.
 */
export function emptyStatus(config: Pick<Config, 'dailyLimit' | 'minuteLimit' | 'reserve'>, now: number, none: string): MirrorStatus {
  const budget = budgetAt({ daily: config.dailyLimit, minute: config.minuteLimit, reserve: config.reserve }, [], now);
  const lists = Object.fromEntries(LIST_NAMES.map((l) => [l, { lastPolledAt: null }])) as Record<ListName, { lastPolledAt: number | null }>;
  const plan = planPass({ now, budget, lists, dueCount: 0, backfillCount: 0, openCount: 0, oldestDetailAt: null, oldestOpenDetailAt: null, history: emptyHistory() });
  const zero = { tickets: 0, open: 0, self: 0, unassigned: 0, resolved: 0, missing: 0, deleted: 0, messages: 0, attachments: 0, outboxPending: 0, outboxFailed: 0 };
  return {
    now: new Date(now).toISOString(),
    budget,
    plan,
    lastSync: null,
    lastPolls: Object.fromEntries(LIST_NAMES.map((l) => [l, null])) as Record<ListName, string | null>,
    counts: zero,
    backfill: { fetched: 0, total: 0, remaining: 0, etaHours: null },
    freshness: { detailsDue: 0, oldestDueSince: null, oldestOpenDetail: null, medianOpenDetailAgeMinutes: null },
    none,
  };
}

/** The status as lines of text for a terminal. */
export function formatStatus(s: MirrorStatus): string {
  const b = s.budget;
  const pct = (n: number, d: number) => (d === 0 ? '0%' : `${Math.round((n / d) * 100)}%`);
  const lines = [
    ...(s.none ? [`mirror    none yet: ${safeText(s.none)}`] : []),
    `budget    ${b.dailyUsed} of ${b.dailyAllowed} requests used in the last 24 h (${pct(b.dailyUsed, b.dailyAllowed)}), ${b.minuteUsed} of ${b.minuteAllowed} in the last minute` +
      (b.foreignPerDay > 0 ? `; another client of the token uses about ${b.foreignPerDay} a day` : ''),
    `last sync ${s.lastSync ? `${s.lastSync.startedAt}: ${s.lastSync.requests} requests, ${s.lastSync.detailsFetched} details${s.lastSync.error ? `, error: ${s.lastSync.error}` : ''}` : 'never'}`,
    `tickets   ${s.counts.tickets} mirrored: ${s.counts.open} open, ${s.counts.self} assigned to me, ${s.counts.unassigned} unassigned, ${s.counts.resolved} resolved, ${s.counts.missing} missing, ${s.counts.deleted} deleted`,
    `          ${s.counts.messages} messages, ${s.counts.attachments} attachments; reply outbox: ${s.counts.outboxPending} pending, ${s.counts.outboxFailed} failed`,
    `backfill  ${s.backfill.fetched} of ${s.backfill.total} details fetched (${pct(s.backfill.fetched, s.backfill.total)}); ${s.backfill.remaining} to go` +
      (s.backfill.remaining > 0 ? `, ETA ${s.backfill.etaHours === null ? 'unknown (no budget left for it)' : `about ${s.backfill.etaHours} h`}` : ''),
    `freshness ${s.freshness.detailsDue} details due` +
      (s.freshness.oldestDueSince ? ` (oldest since ${s.freshness.oldestDueSince})` : '') +
      (s.freshness.medianOpenDetailAgeMinutes !== null ? `; open tickets' details are ${s.freshness.medianOpenDetailAgeMinutes} min old (median)` : ''),
    `lists     last polled: ${Object.entries(s.lastPolls).map(([l, t]) => `${l} ${t ?? 'never'}`).join(', ')}`,
  ];
  return `${lines.join('\n')}\n`;
}
