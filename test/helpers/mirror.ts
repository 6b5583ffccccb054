import { ManualClock } from '../../src/clock.ts';
import { queryRows, sql, type Db } from '../../src/db/connect.ts';
import { createLogger } from '../../src/logger.ts';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '../../src/simulator/index.ts';
import { SyncEngine } from '../../src/sync/engine.ts';
import type { PassSummary } from '../../src/sync/events.ts';
import type { TestDatabase } from './db.ts';
import { mirrorTickets, normaliseTruth } from './truth.ts';

/**
 * A mirror in virtual time: the simulator and the engine share one ManualClock; the engine's back-off sleeps advance
 * it instead of waiting. Nothing here waits on wall-clock time.
 */
export interface VirtualMirror {
  clock: ManualClock;
  sim: RunningSimulator;
  engine: SyncEngine;
  db: Db;
  /** Runs passes 15 s of virtual time apart until `done()` or `maxPasses`. */
  runUntil(done: () => boolean | Promise<boolean>, maxPasses?: number): Promise<PassSummary[]>;
  /** Runs passes for `ms` of virtual time. */
  runFor(ms: number): Promise<PassSummary[]>;
  /** A new engine on the same database and clock, as after a restart. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export const TICK_MS = 15_000;

export async function virtualMirror(database: TestDatabase, simOptions: SimulatorOptions = {}, limits = { daily: 1440, minute: 60, reserve: 0.1 }): Promise<VirtualMirror> {
  const clock = new ManualClock(Date.UTC(2026, 0, 5, 9, 0, 0));
  const sim = await startSimulator({ seed: 7, openTickets: 8, resolvedTickets: 12, ...simOptions, clock });
  const logger = createLogger('silent');
  const makeEngine = () =>
    new SyncEngine({
      db: database.db,
      apiUrl: sim.url,
      apiToken: sim.token,
      clock,
      limits,
      logger,
      realTime: false,
      sleep: async (ms) => {
        clock.advance(ms);
      },
    });
  const mirror: VirtualMirror = {
    clock,
    sim,
    engine: makeEngine(),
    db: database.db,
    async runUntil(done, maxPasses = 2_000) {
      const summaries: PassSummary[] = [];
      for (let i = 0; i < maxPasses && !(await done()); i++) {
        summaries.push(await mirror.engine.pass());
        clock.advance(TICK_MS);
      }
      return summaries;
    },
    async runFor(ms) {
      const end = clock.now() + ms;
      return mirror.runUntil(() => clock.now() >= end, Math.ceil(ms / TICK_MS) + 1);
    },
    async restart() {
      mirror.engine = makeEngine();
      await mirror.engine.init();
    },
    close: () => sim.close(),
  };
  await mirror.engine.init();
  return mirror;
}

/** The mirror's live tickets in the API's shape, sorted by id: equal to `truthOf` when the mirror is exact. */
export async function mirrorAsTruth(db: Db): Promise<unknown[]> {
  return [...(await mirrorTickets(db)).entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, t]) => t);
}

/** The simulator's truth, normalised the same way, sorted by id. */
export function truthOf(sim: RunningSimulator): unknown[] {
  return sim.model
    .groundTruth()
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map(normaliseTruth);
}

export async function count(db: Db, query: ReturnType<typeof sql>): Promise<number> {
  const [row] = await queryRows<{ n: number }>(db, query);
  return Number(row?.n ?? 0);
}
