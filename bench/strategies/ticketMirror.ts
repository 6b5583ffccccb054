import { minGapMs, nextWake, WAKE } from '../../src/daemon/daemon.ts';
import { createLogger } from '../../src/logger.ts';
import { SyncEngine } from '../../src/sync/engine.ts';
import { isoMicros } from '../../src/time.ts';
import type { Plan } from '../../src/sync/planner.ts';
import type { Strategy, StrategyContext } from './strategy.ts';

/**
 * ticket-mirror itself: the real SyncEngine (planner, budget gate, API client, differ, writers) against the simulator
 * over HTTP, its passes run when the daemon's loop would run them (`nextWake`: the plan's `wakeAt`, one slot of the
 * minute allowance after a pass at the soonest), at that very instant, in whichever tick it falls. The engine never
 * sleeps here: no faults are injected, so no request is retried.
 *
 * Most ticks hold no wake and are skipped: until the next wake every input of the plan is constant (see
 * sync/planner.ts), so a pass on them would request nothing. `everyTick` checks that claim: on each such tick (from one
 * slot after the last pass) it runs a probe pass, and fails the run if one requests anything. The probes change
 * nothing the loop sees, so the run's requests must be the very same as without them.
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
  // The soonest the loop would run a pass whatever the plan said (one slot after a pass, past a 429's hold): the ticks
  // `everyTick` probes between it and `wakeAt` check the plan's claim that they would be idle.
  let earliest = -Infinity;

  return {
    name: 'ticket-mirror',
    async tick(now, until) {
      if (ctx.everyTick) {
        const at = Math.max(now, earliest);
        if (at < Math.min(until, wakeAt)) {
          clock.set(at);
          const probe = await engine.pass();
          if (probe.requests > 0) {
            throw new Error(`the plan said no pass could request anything before ${isoMicros(wakeAt)}; one at ${isoMicros(at)} sent ${probe.requests}`);
          }
        }
      }
      // The daemon's loop: a pass at the wake (in this tick, at its instant), then sleep until `nextWake` says — the
      // plan's wakeAt, at least one slot of the minute allowance later, past a 429's hold — and pass again while that
      // falls before `until`.
      if (wakeAt >= until) return;
      clock.set(Math.max(clock.now(), wakeAt));
      for (;;) {
        const summary = await engine.pass();
        // A refused or throttled request ends a pass quietly (the 429s are counted from the simulator's log); anything
        // else means the benchmark is not measuring what it should.
        if (summary.errors.length > 0 && summary.stoppedBy !== 'rate_limited') {
          throw new Error(`ticket-mirror pass failed: ${summary.errors.join('; ')}`);
        }
        const at = clock.now();
        // A pass that requested nothing changed nothing its plan depends on: that plan's wakeAt stands.
        const planWakeAt = summary.requests === 0 && plan ? plan.wakeAt : (await engine.plan(at)).wakeAt;
        const budget = engine.gate.snapshot(at);
        const loop = {
          now: at,
          notBefore: summary.stoppedBy === 'rate_limited' ? budget.nextSlotAt : 0,
          minGapMs: minGapMs(budget.minuteAllowed),
          maxSleepMs: WAKE.maxSleepMs,
        };
        wakeAt = nextWake({ ...loop, planWakeAt });
        earliest = nextWake({ ...loop, planWakeAt: at });
        if (wakeAt >= until) return;
        clock.set(wakeAt);
      }
    },
    async close() {
      await engine.gate.onIdle();
    },
  };
}
