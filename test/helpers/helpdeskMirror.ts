import { ManualClock } from '../../src/clock.ts';
import { createLogger } from '../../src/logger.ts';
import { createActivityDriver, startSimulator } from '../../src/simulator/index.ts';
import { SyncEngine } from '../../src/sync/engine.ts';
import { HOUR_MS, MINUTE_MS } from '../../src/time.ts';
import type { TestDatabase } from './db.ts';

export interface HelpdeskMirrorOptions {
  /** Virtual hours of helpdesk life mirrored, ending at `end`. @default 48 */
  hours?: number;
  /** Virtual time between two passes: coarser than the daemon's 15 s, to keep tests quick. @default 5 min */
  stepMs?: number;
  /** @default Date.now() */
  end?: number;
  seed?: number;
  /** Called after every pass with the engine, e.g. for a metrics registry to observe it. */
  onEngine?: (engine: SyncEngine) => void;
}

/**
 * A mirror of a helpdesk's recent life, for the BI tests: the simulator (with its seeded past of tickets) and an
 * activity driver in virtual time, synced by the real engine into `database`, ending at the present so that views
 * measured against now() (open_backlog_daily, unread_waiting) see it as recent. Nothing waits on wall-clock time.
 */
export async function mirrorHelpdesk(database: TestDatabase, options: HelpdeskMirrorOptions = {}): Promise<{ end: number }> {
  const end = options.end ?? Date.now();
  const hours = options.hours ?? 48;
  const step = options.stepMs ?? 5 * MINUTE_MS;
  const seed = options.seed ?? 15;
  const clock = new ManualClock(end - hours * HOUR_MS);
  const sim = await startSimulator({ seed, openTickets: 30, resolvedTickets: 90, clock });
  try {
    const engine = new SyncEngine({
      db: database.db,
      apiUrl: sim.url,
      apiToken: sim.token,
      clock,
      limits: { daily: 1440, minute: 60, reserve: 0.1 },
      logger: createLogger('silent'),
      realTime: false,
      sleep: async (ms) => void clock.advance(ms),
    });
    options.onEngine?.(engine);
    await engine.init();
    const activity = createActivityDriver(sim.model, { seed });
    while (clock.now() < end) {
      const from = clock.now();
      await engine.pass();
      clock.advance(Math.min(step, end - from));
      activity.step(from, clock.now());
    }
    await engine.pass();
  } finally {
    await sim.close();
  }
  return { end };
}
