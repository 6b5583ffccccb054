import { ManualClock } from '../src/clock.ts';
import { sql, type Db } from '../src/db/connect.ts';
import { createActivityDriver, startSimulator, type RequestLogEntry } from '../src/simulator/index.ts';
import { DAY_MS, HOUR_MS } from '../src/time.ts';
import { freshDatabase } from './benchDatabase.ts';
import { ChangeRecorder } from './changeRecorder.ts';
import { compareWithTruth, type Exactness } from './exactness.ts';
import { LagTracker, type ObservedChange, type Observer } from './lagTracker.ts';
import type { StrategyFactory, StrategyName } from './strategies/strategy.ts';
import { activityEnd, runEnd, type Workload } from './workload.ts';

/**
 * One strategy, one simulated run. A fresh simulator (the workload's seed: the same dataset for every strategy), a
 * fresh database schema, one ManualClock shared by both. Every 15 s of virtual time the activity driver draws that
 * slice's arrivals; each is applied at its own instant (the next whole ms), and the strategy runs in the time between
 * them (`tick(from, until)` up to the next arrival, then on to the slice's end). The arrivals and the instants never
 * depend on the strategy, so every strategy sees the very same mutations at the very same instants (checked by the
 * caller via `workloadDigest`).
 */

export const TICK_MS = 15_000;
/** How long the run goes on in quiet after the end, to see the mirror become exact. */
export const MAX_QUIET_HOURS = 48;

export interface VirtualRun {
  strategy: StrategyName;
  changes: ObservedChange[];
  /** What the simulator received, in order. */
  requests: RequestLogEntry[];
  /** Requests sent per simulated day (the quiet time counts in the last), by what they were for. */
  requestsPerDay: Array<Record<string, number>>;
  backfillDoneAt: number | null;
  /** Open tickets at the start of each hour of the run. */
  openByHour: number[];
  exactness: Exactness;
  /**
   * Hours of quiet (no activity) after which the mirror first equalled the ground truth, checked at each hour up to
   * `MAX_QUIET_HOURS`; null when it never did. Detail-only changes are found only by re-reading each open ticket, which
   * takes hours of budget for hundreds of them: this says how long the last ones take.
   */
  exactAfterQuietHours: number | null;
  /** Wall-clock seconds the run took. */
  wallSeconds: number;
}

export interface RunOptions {
  postgresUrl: string | null;
  /** See StrategyContext.everyTick. @default false */
  everyTick?: boolean;
  /** Called about once per simulated day. */
  progress?: (line: string) => void;
}

export async function runVirtual(w: Workload, name: StrategyName, make: StrategyFactory, opts: RunOptions): Promise<VirtualRun> {
  const started = performance.now();
  const clock = new ManualClock(w.start);
  const sim = await startSimulator({
    seed: w.seed,
    clock,
    openTickets: w.openTickets,
    resolvedTickets: w.resolvedTickets,
    minuteLimit: w.limits.minute,
    dailyLimit: w.limits.daily,
  });
  const database = await freshDatabase(opts.postgresUrl, name.replace(/-/g, '_'), { asyncCommit: true });
  try {
    const recorder = new ChangeRecorder(sim.model);
    const tracker = new LagTracker(recorder.initialIds);
    const driver = createActivityDriver(sim.model, { seed: w.activitySeed, ratesPerDay: w.ratesPerDay, correlated: w.correlated ?? false });
    const requestsPerDay: Array<Record<string, number>> = Array.from({ length: Math.ceil(w.days) }, () => ({}));
    const end = runEnd(w);
    const observer: Observer = {
      polled: (list, at) => tracker.polled(list, at),
      detailStored: (id, at) => tracker.detailStored(id, at),
      sent: (kind, at) => {
        if (at >= end) return;
        const day = requestsPerDay[Math.min(requestsPerDay.length - 1, Math.floor((at - w.start) / DAY_MS))]!;
        day[kind] = (day[kind] ?? 0) + 1;
      },
    };
    const strategy = await make({ clock, sim, db: database.db, limits: w.limits, observer, everyTick: opts.everyTick ?? false });
    const stopActivity = activityEnd(w);
    const moveClock = (to: number) => {
      if (clock.now() > to) throw new Error(`${name} moved the clock past the end of its tick (${clock.now() - to} ms)`);
      clock.set(to);
    };
    let nextReport = w.start + DAY_MS;
    const openByHour: number[] = [];
    for (let t = w.start; t < end; t += TICK_MS) {
      moveClock(t);
      if ((t - w.start) % HOUR_MS === 0) openByHour.push(sim.model.listOpen().length);
      let from = t;
      for (const arrival of t < stopActivity ? driver.arrivals(t, Math.min(t + TICK_MS, stopActivity)) : []) {
        const at = Math.ceil(arrival.at);
        if (at > from) await strategy.tick(from, at);
        from = Math.max(from, at);
        moveClock(from);
        const applied = driver.apply(arrival);
        if (applied) for (const change of recorder.record([applied])) tracker.add(change);
      }
      if (from < t + TICK_MS) await strategy.tick(from, t + TICK_MS);
      if ((t - w.start) % HOUR_MS === 0) await vacuum(database.db);
      if (t >= nextReport) {
        opts.progress?.(`${name}: day ${Math.round((t - w.start) / DAY_MS)} (${Math.round(performance.now() - started) / 1000} s, backfill left ${tracker.backfillRemaining})`);
        nextReport += DAY_MS;
      }
    }
    clock.set(Math.max(clock.now(), end));
    await strategy.close();
    recorder.verify();
    const exactness = await compareWithTruth(database.db, sim.model);
    const requests = [...sim.log];
    // Then more quiet, hour by hour, until the mirror is exact: not part of any other figure.
    let exactAfterQuietHours: number | null = exactness.exact ? w.quietMs / HOUR_MS : null;
    for (let t = end; exactAfterQuietHours === null && t < end + (w.quietCheckHours ?? MAX_QUIET_HOURS) * HOUR_MS; t += TICK_MS) {
      clock.set(Math.max(clock.now(), t));
      await strategy.tick(t, t + TICK_MS);
      if ((t + TICK_MS - end) % HOUR_MS !== 0) continue;
      await strategy.close();
      if ((await compareWithTruth(database.db, sim.model)).exact) exactAfterQuietHours = (t + TICK_MS - end + w.quietMs) / HOUR_MS;
    }
    return {
      strategy: name,
      changes: tracker.changes,
      requests,
      requestsPerDay,
      backfillDoneAt: tracker.backfillDoneAt,
      openByHour,
      exactness,
      exactAfterQuietHours,
      wallSeconds: (performance.now() - started) / 1000,
    };
  } finally {
    await sim.close();
    await database.destroy();
  }
}

/**
 * What autovacuum does in real time, once per simulated hour. Every poll rewrites the row of each listed ticket, and a
 * simulated week passes in minutes, far faster than autovacuum wakes: without this the tables bloat and every query
 * slows, which changes the run's wall time but none of its results.
 */
async function vacuum(db: Db): Promise<void> {
  await db.execute(sql`vacuum analyze tickets, messages, attachments, ticket_history, list_polls, api_requests, sync_runs`);
}

/** A fingerprint of the mutations a run saw: equal across strategies, or the comparison is void. */
export function workloadDigest(changes: readonly ObservedChange[]): string {
  let h = 0x811c9dc5;
  for (const c of changes) {
    const s = `${c.at}|${c.ticketId}|${c.op}|${c.lists}`;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  }
  return `${changes.length}:${(h >>> 0).toString(16)}`;
}
