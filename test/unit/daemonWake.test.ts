import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { Daemon, minGapMs, nextWake, WAKE, type AfterPass } from '../../src/daemon/daemon.ts';
import { createLogger } from '../../src/logger.ts';
import type { SyncEngine } from '../../src/sync/engine.ts';
import type { PassStop, PassSummary } from '../../src/sync/events.ts';
import { BudgetGate } from '../../src/sync/gate.ts';

const S = 1_000;
const MIN = 60 * S;
const limits = { daily: 1440, minute: 60, reserve: 0.1 };
const logger = createLogger('silent');
const T0 = Date.UTC(2026, 0, 5, 8, 0, 0);

describe('nextWake: when the loop runs its next pass', () => {
  const base = { now: T0, notBefore: 0, minGapMs: 2 * S, maxSleepMs: 5 * MIN };
  it.each([
    ['at the instant the plan says', { planWakeAt: T0 + 3 * MIN }, T0 + 3 * MIN],
    ['never later than the safety cap', { planWakeAt: T0 + 29 * MIN }, T0 + 5 * MIN],
    ['one slot of the minute allowance after a pass that still wants to request', { planWakeAt: T0 }, T0 + 2 * S],
    ['at the cap when there is no plan', { planWakeAt: null }, T0 + 5 * MIN],
    ['not before a back-off ends, even when the plan is due', { planWakeAt: T0, notBefore: T0 + 15 * MIN }, T0 + 15 * MIN],
    ['not before a back-off ends, beyond the cap too', { planWakeAt: T0 + MIN, notBefore: T0 + 2 * 60 * MIN }, T0 + 2 * 60 * MIN],
    ['at the plan when a back-off ended already', { planWakeAt: T0 + MIN, notBefore: T0 - MIN }, T0 + MIN],
  ])('%s', (_, w, expected) => {
    expect(nextWake({ ...base, ...w })).toBe(expected);
  });
});

describe('minGapMs: one slot of the minute allowance', () => {
  it.each([
    ['54 a minute: 60/54 s, rounded up to the millisecond', 54, 1112],
    ['540 a minute', 540, 112],
    ['one a minute', 1, 60 * S],
    ['no allowance known: as long as after a failed plan, not a spin', 0, WAKE.planFailedMs],
  ])('%s', (_, perMinute, expected) => {
    expect(minGapMs(perMinute)).toBe(expected);
  });
});

describe('Daemon loop: wakes when the plan says', () => {
  /**
   * A stand-in engine: each pass ends as `outcomes` say, and the plan after it wakes at `wakeAfter(now)`. The loop's
   * sleep moves the ManualClock; the test stops the daemon once the clock passes `until`.
   */
  function harness(opts: {
    wakeAfter: (now: number) => number;
    outcomes?: Array<PassStop | null | Error>;
    until: number;
    afterPass?: AfterPass;
    /** What happens to the clock after each sleep has moved it (a jump). */
    onSleep?: (clock: ManualClock, sleeps: number) => void;
  }) {
    const clock = new ManualClock(T0);
    const passes: number[] = [];
    const sleeps: number[] = [];
    const outcomes = opts.outcomes ?? [null];
    const gate = new BudgetGate({ limits, clock, samples: [], realTimeInterval: false });
    const engine = {
      limits,
      gate,
      async pass(): Promise<PassSummary> {
        const outcome = outcomes[Math.min(passes.length, outcomes.length - 1)]!;
        passes.push(clock.now() - T0);
        if (outcome instanceof Error) throw outcome;
        return { startedAt: 0, finishedAt: 0, requests: 1, polls: [], ticketsChanged: 0, detailsFetched: 0, deleted: 0, missing: 0, errors: outcome ? ['x'] : [], failedLists: [], stoppedBy: outcome };
      },
      async plan() {
        return { wakeAt: opts.wakeAfter(clock.now()), daily: { allowed: 1296, polls: 0, liveDetails: 0, background: 0 } };
      },
      async workCounts() {
        return { due: 0, backfill: 0 };
      },
    } as unknown as SyncEngine;
    let daemon: Daemon;
    const sleep = async (ms: number) => {
      sleeps.push(ms);
      clock.advance(ms);
      opts.onSleep?.(clock, sleeps.length);
      if (clock.now() - T0 >= opts.until) void daemon.stop();
    };
    daemon = new Daemon({ engine, clock, logger, sleep, ...(opts.afterPass ? { afterPass: opts.afterPass } : {}) });
    return { clock, daemon, passes, sleeps };
  }

  async function runUntilStopped(daemon: Daemon): Promise<void> {
    await daemon.start();
    // The loop runs on its own; stop() (called by the sleep past `until`) resolves once it has ended.
    await new Promise<void>((resolve) => {
      const check = () => (daemon.health.state === 'stopped' ? resolve() : setImmediate(check));
      check();
    });
  }

  it("runs a pass at each plan's wakeAt, not on a fixed tick", async () => {
    // The plan says: next at the next multiple of 7 min.
    const { daemon, passes } = harness({ wakeAfter: (now) => T0 + (Math.floor((now - T0) / (7 * MIN)) + 1) * 7 * MIN, until: 30 * MIN });
    await runUntilStopped(daemon);
    expect(passes.map((t) => t / MIN)).toEqual([0, 5, 7, 12, 14, 19, 21, 26, 28]);
    // 5 and 12 …: a plan 7 min away is cut at the 5 min safety cap, then the loop wakes at the plan's instant.
    expect(WAKE.maxSleepMs).toBe(5 * MIN);
  });

  it('a plan that wants to request at once is run again one slot of the minute allowance later, not in a spin', async () => {
    const { daemon, passes } = harness({ wakeAfter: (now) => now, until: 10 * S });
    await runUntilStopped(daemon);
    // 54 a minute allowed: one slot is 60/54 s, rounded up to the millisecond.
    const gap = Math.ceil(60_000 / 54);
    expect(passes).toEqual([0, gap, 2 * gap, 3 * gap, 4 * gap, 5 * gap, 6 * gap, 7 * gap, 8 * gap]);
  });

  it('keeps the back-off after server trouble: 1 min doubling, whatever the plan says', async () => {
    const { daemon, passes } = harness({
      wakeAfter: (now) => now + 30 * S,
      outcomes: ['server_error', 'server_error', 'server_error', null, null],
      until: 9 * MIN,
    });
    await runUntilStopped(daemon);
    // Failures at 0, 1, 3; a good pass at 7; then the plan's 30 s.
    expect(passes.map((t) => t / MIN)).toEqual([0, 1, 3, 7, 7.5, 8, 8.5]);
    expect(daemon.health.state).toBe('stopped');
  });

  it('wakes early when a reply row is inserted while it sleeps, within one probe', async () => {
    // One row is inserted at 2 min 1 s; the pass after it delivers it.
    const inserted = T0 + 2 * MIN + 1 * S;
    let delivered = 0;
    let clock: ManualClock;
    const rows = () => (clock.now() >= inserted ? 1 : 0);
    const afterPass: AfterPass = Object.assign(async () => void (delivered = rows()), { waiting: async () => rows() - delivered });
    const h = harness({ wakeAfter: (now) => now + 60 * MIN, until: 20 * MIN, afterPass });
    clock = h.clock;
    await runUntilStopped(h.daemon);
    // Passes at 0, at the first probe after the insert (2 min 5 s), then at the 5 min cap from there on: the plan's
    // hour is never reached.
    expect(h.passes).toEqual([0, 2 * MIN + WAKE.probeMs, 7 * MIN + WAKE.probeMs, 12 * MIN + WAKE.probeMs, 17 * MIN + WAKE.probeMs]);
    expect(h.sleeps.every((ms) => ms <= WAKE.probeMs)).toBe(true);
  });

  it('does not wake for a waiting reply while it backs off after a rejected token', async () => {
    const { AuthError } = await import('../../src/errors.ts');
    // A reply waits, and another one every time it is asked: only the back-off decides.
    let calls = 0;
    const afterPass: AfterPass = Object.assign(async () => {}, { waiting: async () => ++calls });
    const h = harness({ wakeAfter: (now) => now + MIN, outcomes: [new AuthError('401', 401)], until: 50 * MIN, afterPass });
    await runUntilStopped(h.daemon);
    expect(h.passes.map((t) => t / MIN)).toEqual([0, 15, 45]);
    expect(h.daemon.health.state).toBe('stopped');
  });

  it.each([
    ['while it sleeps towards the plan', { outcomes: [null] }],
    ['while it backs off after server trouble', { outcomes: ['server_error' as const, null] }],
  ])('a clock set back a year %s: the loop goes on at the same pace, not a year later', async (_, { outcomes }) => {
    const YEAR = 365 * 24 * 60 * MIN;
    // The clock ran a year ahead; the first sleep ends with it set right (at T0 + 1 min in the truth).
    const h = harness({
      wakeAfter: (now) => now + 2 * MIN,
      outcomes,
      until: 10 * MIN,
      onSleep: (clock, n) => {
        if (n === 1) clock.set(clock.now() - YEAR);
      },
    });
    h.clock.set(T0 + YEAR);
    await runUntilStopped(h.daemon);
    // Passes at the year-ahead start, then every 2 min (1 min after a failure) from the true clock: never a sleep as
    // long as the jump.
    const truth = h.passes.slice(1).map((t) => t / MIN);
    expect(h.passes[0]).toBe(YEAR);
    expect(truth[0]).toBeLessThanOrEqual(2);
    expect(truth.at(-1)).toBeGreaterThanOrEqual(8);
    expect(h.sleeps.every((ms) => ms <= WAKE.maxSleepMs)).toBe(true);
  });

  it('stop() wakes a sleeping loop at once', async () => {
    const clock = new ManualClock(T0);
    let passes = 0;
    const engine = {
      limits,
      gate: new BudgetGate({ limits, clock, samples: [], realTimeInterval: false }),
      pass: async () => {
        passes++;
        return { startedAt: 0, finishedAt: 0, requests: 0, polls: [], ticketsChanged: 0, detailsFetched: 0, deleted: 0, missing: 0, errors: [], failedLists: [], stoppedBy: null };
      },
      plan: async () => ({ wakeAt: clock.now() + 60 * MIN, daily: { allowed: 1296, polls: 0, liveDetails: 0, background: 0 } }),
      workCounts: async () => ({ due: 0, backfill: 0 }),
    } as unknown as SyncEngine;
    // The default sleep: a real timer of up to 5 min, which only stop() can cut short.
    const daemon = new Daemon({ engine, clock, logger });
    await daemon.start();
    await new Promise((resolve) => setImmediate(resolve));
    while (daemon.nextWakeAt === null) await new Promise((resolve) => setImmediate(resolve));
    expect(daemon.nextWakeAt).toBe(T0 + WAKE.maxSleepMs);
    const started = performance.now();
    await daemon.stop();
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(passes).toBe(1);
    expect(daemon.health.state).toBe('stopped');
  });
});

describe('Daemon pass: a reply that waits ends the background work', () => {
  it('a pass stops its re-reads once the after-pass probe sees a reply waiting, and the reply goes next', async () => {
    const clock = new ManualClock(T0);
    const gate = new BudgetGate({ limits, clock, samples: [], realTimeInterval: false });
    const order: string[] = [];
    let background = 0;
    const engine = {
      limits,
      gate,
      async pass(options: { yieldBackground?: () => boolean } = {}): Promise<PassSummary> {
        // 120 re-reads a second apart, each asking first whether to make room, as the engine's workers do.
        for (let i = 0; i < 120; i++) {
          if (options.yieldBackground?.()) break;
          background++;
          clock.advance(S);
          await new Promise((resolve) => setImmediate(resolve));
        }
        order.push(`pass: ${background} re-reads`);
        return { startedAt: 0, finishedAt: 0, requests: background, polls: [], ticketsChanged: 0, detailsFetched: 0, deleted: 0, missing: 0, errors: [], failedLists: [], stoppedBy: null };
      },
      async plan() {
        return { wakeAt: clock.now() + 5 * MIN, daily: { allowed: 1296, polls: 0, liveDetails: 0, background: 0 } };
      },
      async workCounts() {
        return { due: 0, backfill: 0 };
      },
    } as unknown as SyncEngine;
    // A reply row inserted 3 s into the pass.
    const afterPass: AfterPass = Object.assign(async () => void order.push('outbox'), { waiting: async () => (clock.now() - T0 >= 3 * S ? 1 : 0) });
    const daemon = new Daemon({ engine, clock, logger, afterPass, sleep: async () => {} });
    await daemon.tick();
    // Before: all 120 re-reads (two minutes here), then the reply.
    expect(background).toBeLessThanOrEqual(WAKE.probeMs / S + 2);
    expect(order).toEqual([`pass: ${background} re-reads`, 'outbox']);
  });
});
