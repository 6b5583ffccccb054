import type { ManualClock } from '../../src/clock.ts';
import type { Db } from '../../src/db/connect.ts';
import type { RunningSimulator } from '../../src/simulator/index.ts';
import type { BudgetLimits } from '../../src/sync/budget.ts';
import type { Observer } from '../lagTracker.ts';

/**
 * A way of keeping a mirror, driven in virtual time. The runner calls `tick(now, until)` for each stretch of virtual
 * time between two events: the start of a 15 s step and the arrivals of mutations within it (each applied at its own
 * instant, before the tick that starts there). A strategy may move the clock forward within the tick (to pace its
 * requests) but never to or past `until`, where the next mutation is applied or the next step starts.
 */
export interface Strategy {
  readonly name: StrategyName;
  tick(now: number, until: number): Promise<void>;
  close(): Promise<void>;
}

export type StrategyName = 'ticket-mirror' | 'naive-cron' | 'full-refresh';

export interface StrategyContext {
  clock: ManualClock;
  sim: RunningSimulator;
  db: Db;
  limits: BudgetLimits;
  /** Where the strategy reports each request it sends and each list and detail it stores. */
  observer: Observer;
  /** Probe every tick ticket-mirror's loop skips with a pass that must request nothing (slow; checks the plan's wakeAt). */
  everyTick: boolean;
}

export type StrategyFactory = (ctx: StrategyContext) => Promise<Strategy>;
