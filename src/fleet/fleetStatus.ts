import type { Db } from '../db/connect.ts';
import { listAccounts, type Account } from '../db/repos/accounts.ts';
import { migratedSchemas, mirrorFigures, type MirrorFigures } from '../db/repos/fleetStatus.ts';
import { safeText } from '../logger.ts';
import { budgetAt } from '../sync/budget.ts';
import { canonicalTimestamp, SECOND_MS } from '../time.ts';
import { readQueues, type QueueReader, type QueuesView } from './queueStatus.ts';

/**
 * The state of a fleet, read from PostgreSQL alone (no request to any API): the control table `accounts` (what the
 * workers record after each pass), each account's own mirror (its ledger for the budget, its backfill, its last clean
 * pass: db/repos/fleetStatus.ts) and pg-boss's queues. What `fleet status` prints, `/status.json` of `fleet run`
 * serves, and the fleet's /metrics and status page show.
 *
 * Statements per read: 1 (accounts) + 1 (which schemas are migrated) + ⌈accounts / 50⌉ (the mirrors, `concurrency`
 * at a time) + pg-boss: 1 (installed?) + 1 (queues) + 4 per queue + 1 (running accounts). For 1,000 accounts and the
 * worker's one queue: 29 (23 before any worker has installed pg-boss, as bench/fleetStatus.ts counts).
 */

/** What an account is doing, as shown: the worker's state, except that a paused account is `paused`. */
export type ShownState = 'ok' | 'failing' | 'auth_failed' | 'paused' | 'new';
export const SHOWN_STATES: readonly ShownState[] = ['auth_failed', 'failing', 'new', 'ok', 'paused'];

export interface AccountStatus {
  name: string;
  schema: string;
  state: ShownState;
  /** Passes failed in a row (the worker's back-off counter). */
  failures: number;
  pausedAt: string | null;
  createdAt: string;
  /** The last pass a worker recorded, failed or not. */
  lastPass: { at: string; worker: string | null; requests: number | null } | null;
  /** When the newest pass that recorded no error finished; null when none did (or the mirror is not migrated). */
  lastCleanPassAt: string | null;
  /**
   * Seconds since the last clean pass — since the account was added when it never had one. Grows while an account
   * fails, waits, or is paused.
   */
  lagSeconds: number;
  /** When the pass running now started (its pg-boss job went active); null when none runs. */
  runningSince: string | null;
  /** When the worker that ran the last pass planned the next one (the planner's wakeAt). */
  nextPassAt: string | null;
  /** Seconds the next pass is past due and not started (0 when not due yet, running, or paused). */
  overdueSeconds: number;
  /** From the account's own ledger and limits (sync/budget.ts); null until its mirror is migrated (its first pass). */
  budget: { dailyAllowed: number; dailyUsed: number; dailyLeft: number; minuteAllowed: number; minuteUsed: number } | null;
  /** Tickets with a detail of all (not deleted), as `status` counts them; null until migrated. */
  backfill: { fetched: number; total: number } | null;
  /** The last pass's error, scrubbed of credentials and control characters, at most 300 characters. */
  lastError: string | null;
}

export interface FleetTotals {
  accounts: number;
  states: Record<ShownState, number>;
  /** Requests of every account in the last 24 h (their ledgers). */
  requests24h: number;
  /** Budget left in the rolling 24 h, summed over accounts that are not paused. */
  budgetLeft24h: number;
  fetched: number;
  total: number;
  /** Accounts whose next pass is more than OVERDUE_SECONDS past due and not started (a fleet short of workers). */
  overdue: number;
  /** The largest lag of an account that is not paused, seconds (0 without any). */
  maxLagSeconds: number;
}

export interface FleetStatus {
  now: string;
  /** The control schema (FLEET_SCHEMA). */
  schema: string;
  /** Worst first: auth_failed, failing, then the most lag; paused last. */
  accounts: AccountStatus[];
  totals: FleetTotals;
  jobs: QueuesView;
}

export interface LoadFleetStatusOptions extends FiguresOptions {
  /** The control schema's handle (db/fleet.ts): search_path is the fleet schema; accounts' schemas are named. */
  db: Db;
  schema: string;
  jobsSchema: string;
  /** pg-boss, read through its API (queueStatus.ts); a started instance or a reader. */
  queues: QueueReader;
  now: number;
  /**
   * Where the mirrors' figures come from: by default read now (readMirrorFigures); fleet run's routes keep a read for a
   * while (statusRoutes.ts), as it costs most of the whole.
   */
  figures?: (accounts: readonly Account[]) => Promise<Map<string, MirrorFigures>>;
}

export interface FiguresOptions {
  /** Accounts per statement. @default 50 */
  batch?: number;
  /** Statements at once (keep it at most the pool's size). @default 2 */
  concurrency?: number;
}

export async function loadFleetStatus(o: LoadFleetStatusOptions): Promise<FleetStatus> {
  const accounts = await listAccounts(o.db);
  const figures = o.figures ?? ((list) => readMirrorFigures(o.db, list, o.now, o));
  const [found, jobs] = await Promise.all([figures(accounts), readQueues(o.queues, o.db, o.jobsSchema)]);
  const rows = accounts.map((a) => accountStatus(a, found.get(a.schemaName), jobs.running.get(a.name) ?? null, o.now));
  rows.sort(worstFirst);
  return { now: new Date(o.now).toISOString(), schema: o.schema, accounts: rows, totals: totalsOf(rows), jobs: jobs.view };
}

/** The figures of every account whose mirror is migrated, by schema: one statement per `batch` accounts. */
export async function readMirrorFigures(db: Db, accounts: readonly Account[], now: number, o: FiguresOptions = {}): Promise<Map<string, MirrorFigures>> {
  const migrated = await migratedSchemas(db, accounts.map((a) => a.schemaName));
  const readable = accounts.filter((a) => migrated.has(a.schemaName));
  const size = o.batch ?? 50;
  const batches: Account[][] = [];
  for (let i = 0; i < readable.length; i += size) batches.push(readable.slice(i, i + size));
  const all = new Map<string, MirrorFigures>();
  let next = 0;
  const lane = async () => {
    while (next < batches.length) {
      const batch = batches[next++]!;
      const found = await mirrorFigures(db, batch.map((a) => ({ schema: a.schemaName, minuteLimit: a.minuteLimit, dailyLimit: a.dailyLimit })), now);
      for (const [schema, f] of found) all.set(schema, f);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, o.concurrency ?? 2) }, lane));
  return all;
}

/**
 * One account's row; pure. `figures` is undefined while its mirror is not migrated; `runningSince`: when its active
 * job started, null when none runs.
 */
export function accountStatus(a: Account, figures: MirrorFigures | undefined, runningSince: string | null, now: number): AccountStatus {
  const state: ShownState = a.pausedAt !== null ? 'paused' : a.state;
  const lastClean = figures?.lastCleanPassAt ? canonicalTimestamp(figures.lastCleanPassAt) : null;
  const since = (iso: string) => Math.max(0, Math.round((now - Date.parse(iso)) / SECOND_MS));
  const budget = figures ? budgetAt({ daily: a.dailyLimit, minute: a.minuteLimit, reserve: a.reserve }, figures.samples, now) : null;
  return {
    name: a.name,
    schema: a.schemaName,
    state,
    failures: a.failures,
    pausedAt: a.pausedAt,
    createdAt: a.createdAt,
    lastPass: a.lastPassAt ? { at: a.lastPassAt, worker: a.worker, requests: a.lastPassRequests } : null,
    lastCleanPassAt: lastClean,
    lagSeconds: since(lastClean ?? a.createdAt),
    runningSince,
    nextPassAt: a.nextPassAt,
    overdueSeconds: state !== 'paused' && runningSince === null && a.nextPassAt ? since(a.nextPassAt) : 0,
    budget: budget && {
      dailyAllowed: budget.dailyAllowed,
      dailyUsed: budget.dailyUsed,
      dailyLeft: budget.dailyLeft,
      minuteAllowed: budget.minuteAllowed,
      minuteUsed: budget.minuteUsed,
    },
    backfill: figures ? { fetched: figures.fetched, total: figures.live } : null,
    lastError: a.lastError === null ? null : safeText(a.lastError),
  };
}

/** Issue 14's bound: every due poll starts within 30 s of its wakeAt. */
export const OVERDUE_SECONDS = 30;

const RANK: Record<ShownState, number> = { auth_failed: 0, failing: 1, new: 2, ok: 2, paused: 3 };

/** auth_failed, then failing, then the most lag; paused accounts last; ties by name. */
export function worstFirst(a: AccountStatus, b: AccountStatus): number {
  return RANK[a.state] - RANK[b.state] || b.lagSeconds - a.lagSeconds || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

export function totalsOf(rows: readonly AccountStatus[]): FleetTotals {
  const states = Object.fromEntries(SHOWN_STATES.map((s) => [s, 0])) as Record<ShownState, number>;
  const t: FleetTotals = { accounts: rows.length, states, requests24h: 0, budgetLeft24h: 0, fetched: 0, total: 0, overdue: 0, maxLagSeconds: 0 };
  for (const r of rows) {
    states[r.state]++;
    t.requests24h += r.budget?.dailyUsed ?? 0;
    t.fetched += r.backfill?.fetched ?? 0;
    t.total += r.backfill?.total ?? 0;
    if (r.state === 'paused') continue;
    t.budgetLeft24h += r.budget?.dailyLeft ?? 0;
    if (r.overdueSeconds > OVERDUE_SECONDS) t.overdue++;
    t.maxLagSeconds = Math.max(t.maxLagSeconds, r.lagSeconds);
  }
  return t;
}
