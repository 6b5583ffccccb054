import { createLogger } from '../../src/logger.ts';
import { SyncEngine } from '../../src/sync/engine.ts';
import type { Plan } from '../../src/sync/planner.ts';
import type { Strategy, StrategyContext } from './strategy.ts';

/**
 * ticket-mirror itself: the real SyncEngine (planner, budget gate, API client, differ, writers) against the simulator
 * over HTTP, one `pass()` per 15 s tick as the daemon's loop runs it. The engine never sleeps here: no faults are
 * injected, so no request is retried.
 *
 * Most ticks would find nothing to do. After a pass that requested nothing, the ticks before its plan's `wakeAt` are
 * skipped: until then every input of the plan is constant (see sync/planner.ts), so those passes would have been
 * exactly as idle. `everyTick` runs them all anyway, to check that claim (the results must not change).
 */
export async function ticketMirror(ctx: StrategyContext): Promise<Strategy> {
  const { clock, observer } = ctx;
  const engine = new SyncEngine({
    db: ctx.db,
    apiUrl: ctx.sim.url,
    apiToken: ctx.sim.token,
    clock,
    limits: ctx.limits,
    logger: createLogger('silent'),
    realTime: false,
    // One request at a time: with two, the gate may count a finishing request twice for an instant and refuse the
    // last slot of a minute, at random; in virtual time concurrency buys nothing, and the benchmark must be repeatable.
    concurrency: 1,
    sleep: async (ms) => {
      throw new Error(`the engine tried to sleep ${ms} ms: a request failed where none should`);
    },
  });
  await engine.init();
  // Requests by purpose, from the engine's events: what each request was *for* (the ledger's kind column may not say).
  // A 404 does not say which queue it came from: it is counted as a detail for a change.
  engine.events.on('list:polled', ({ list, at }) => {
    observer.sent(`list_${list}`, at);
    observer.polled(list, at);
  });
  engine.events.on('detail:fetched', ({ id, kind }) => {
    observer.sent(kind, clock.now());
    observer.detailStored(id, clock.now());
  });
  engine.events.on('detail:deleted', ({ id }) => {
    observer.sent('detail', clock.now());
    observer.detailStored(id, clock.now());
  });

  let plan: Plan | undefined;
  engine.events.on('pass:started', (e) => {
    plan = e.plan;
  });
  let wakeAt = -Infinity;

  return {
    name: 'ticket-mirror',
    async tick(now) {
      if (!ctx.everyTick && now < wakeAt) return;
      const summary = await engine.pass();
      wakeAt = summary.requests === 0 && summary.errors.length === 0 && plan ? plan.wakeAt : now;
      // A refused or throttled request ends a pass quietly (the 429s are counted from the simulator's log); anything
      // else means the benchmark is not measuring what it should.
      if (summary.errors.length > 0 && summary.stoppedBy !== 'rate_limited') {
        throw new Error(`ticket-mirror pass failed: ${summary.errors.join('; ')}`);
      }
    },
    async close() {
      await engine.gate.onIdle();
    },
  };
}
