import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { Daemon } from '../../src/daemon/daemon.ts';
import { AuthError, RateLimitedError } from '../../src/errors.ts';
import { createLogger } from '../../src/logger.ts';
import { deliverOutbox, type DeliverOptions } from '../../src/outbox/deliver.ts';
import { AUTH_BACKOFF, backoffDelay, FAILURE_BACKOFF, RATE_LIMIT_BACKOFF } from '../../src/sync/backoff.ts';
import { SyncEngine, type EngineOptions } from '../../src/sync/engine.ts';
import type { PassStop, PassSummary } from '../../src/sync/events.ts';
import { BudgetGate } from '../../src/sync/gate.ts';

const S = 1_000;
const MIN = 60 * S;
const limits = { daily: 1440, minute: 60, reserve: 0.1 };
const logger = createLogger('silent');

describe('backoffDelay', () => {
  it.each([
    ['429s in a row', RATE_LIMIT_BACKOFF, [15 * S, 30 * S, MIN, 2 * MIN, 4 * MIN, 8 * MIN, 15 * MIN, 15 * MIN]],
    ['failed passes in a row', FAILURE_BACKOFF, [MIN, 2 * MIN, 4 * MIN, 8 * MIN, 16 * MIN, 30 * MIN, 30 * MIN]],
    ['rejected tokens in a row', AUTH_BACKOFF, [15 * MIN, 30 * MIN, 60 * MIN, 120 * MIN, 120 * MIN]],
  ])('%s: doubles from its first wait to its cap', (_, policy, waits) => {
    expect(waits.map((_, i) => backoffDelay(policy, i + 1))).toEqual(waits);
  });

  it('waits nothing before a failure, and stays at the cap after very many', () => {
    expect(backoffDelay(FAILURE_BACKOFF, 0)).toBe(0);
    expect(backoffDelay(FAILURE_BACKOFF, 10_000)).toBe(30 * MIN);
  });
});

describe('BudgetGate: a 429 streak', () => {
  const rateLimited = (clock: ManualClock, retryAfterMs: number) => () =>
    Promise.reject(new RateLimitedError('429', clock.now() + retryAfterMs));

  it('blocks for longer with each 429 in a row, beyond a short Retry-After, and forgets the streak after a success', async () => {
    const clock = new ManualClock();
    const gate = new BudgetGate({ limits, clock, samples: [], realTimeInterval: false });
    const blockedFor = async (): Promise<number> => {
      await expect(gate.run('detail', rateLimited(clock, 1 * S))).rejects.toBeInstanceOf(RateLimitedError);
      const wait = gate.snapshot().nextSlotAt - clock.now();
      expect(gate.snapshot().minuteLeft).toBe(0);
      clock.advance(wait);
      return wait;
    };
    const waits = [];
    for (let i = 0; i < 8; i++) waits.push(await blockedFor());
    expect(waits).toEqual([15 * S, 30 * S, MIN, 2 * MIN, 4 * MIN, 8 * MIN, 15 * MIN, 15 * MIN]);

    await expect(gate.run('detail', () => Promise.resolve('ok'))).resolves.toBe('ok');
    expect(await blockedFor()).toBe(15 * S);
  });

  it("obeys a Retry-After longer than its own wait", async () => {
    const clock = new ManualClock();
    const gate = new BudgetGate({ limits, clock, samples: [], realTimeInterval: false });
    await expect(gate.run('list_open', rateLimited(clock, 10 * MIN))).rejects.toBeInstanceOf(RateLimitedError);
    expect(gate.snapshot().nextSlotAt).toBe(clock.now() + 10 * MIN);
    // Blocked: a request now is refused locally, without being sent.
    let sent = false;
    await expect(gate.run('list_open', async () => (sent = true))).rejects.toThrow(/per-minute request budget/);
    expect(sent).toBe(false);
  });
});

describe('Daemon back-off', () => {
  /** A stand-in engine whose passes end as the test says: the daemon's state machine is what is tested. */
  function fakeEngine(outcomes: Array<PassStop | null | Error>) {
    let passes = 0;
    const engine = {
      limits,
      async pass(): Promise<PassSummary> {
        const outcome = outcomes[Math.min(passes++, outcomes.length - 1)]!;
        if (outcome instanceof Error) throw outcome;
        return { startedAt: 0, finishedAt: 0, requests: 1, polls: [], ticketsChanged: 0, detailsFetched: 0, deleted: 0, missing: 0, errors: outcome ? ['x'] : [], failedLists: [], stoppedBy: outcome };
      },
    };
    return { engine: engine as unknown as SyncEngine, passes: () => passes };
  }

  /** Ticks every 15 s of virtual time for `minutes` and returns the minutes (from the start) at which a pass ran. */
  async function passTimes(daemon: Daemon, clock: ManualClock, passes: () => number, minutes: number): Promise<number[]> {
    const start = clock.now();
    const times: number[] = [];
    for (let t = 0; t <= minutes * MIN; t += 15 * S) {
      clock.set(start + t);
      const before = passes();
      await daemon.tick();
      if (passes() > before) times.push(t / MIN);
    }
    return times;
  }

  it('after server trouble waits 1 min, doubling to 30 min, and a good pass resets it', async () => {
    const clock = new ManualClock();
    const outcomes: Array<PassStop | null> = [...Array<PassStop>(7).fill('server_error'), null, 'server_error'];
    const { engine, passes } = fakeEngine(outcomes);
    const daemon = new Daemon({ engine, clock, logger });
    const times = await passTimes(daemon, clock, passes, 125);
    // 0, +1, +2, +4, +8, +16, +30 (capped): the 7th failure; then +30 → a good pass; the next tick fails again → +1.
    expect(times.slice(0, 10)).toEqual([0, 1, 3, 7, 15, 31, 61, 91, 91.25, 92.25]);
    expect(daemon.health.state).toBe('failing');
  });

  it('after a rejected token waits 15 min, doubling to 2 h, and says so in its health', async () => {
    const clock = new ManualClock();
    const { engine, passes } = fakeEngine([new AuthError('401 from the API', 401)]);
    const daemon = new Daemon({ engine, clock, logger });
    const times = await passTimes(daemon, clock, passes, 6 * 60);
    expect(times).toEqual([0, 15, 45, 105, 225, 345]);
    expect(daemon.health).toMatchObject({ state: 'auth_failed', reason: '401 from the API' });
  });

  it('after a good pass whose reply the API refused the token for, backs off as for a rejected token, and says so', async () => {
    const clock = new ManualClock();
    const { engine, passes } = fakeEngine([null]);
    let outboxRuns = 0;
    const afterPass = async () => {
      outboxRuns++;
      throw new AuthError('the API rejected the token (HTTP 401: Unauthenticated.)', 401);
    };
    const daemon = new Daemon({ engine, clock, logger, afterPass });
    const times = await passTimes(daemon, clock, passes, 6 * 60);
    // The same schedule as a pass's own rejected token: the good passes in between do not reset it.
    expect(times).toEqual([0, 15, 45, 105, 225, 345]);
    expect(outboxRuns).toBe(times.length);
    expect(daemon.health).toMatchObject({ state: 'auth_failed', reason: 'the API rejected the token (HTTP 401: Unauthenticated.)' });
  });

  it('skips the after-pass work when the pass itself was refused the token, and backs off once per tick', async () => {
    const clock = new ManualClock();
    const { engine, passes } = fakeEngine([new AuthError('401 from the API', 401)]);
    let outboxRuns = 0;
    const daemon = new Daemon({ engine, clock, logger, afterPass: async () => void outboxRuns++ });
    expect(await passTimes(daemon, clock, passes, 6 * 60)).toEqual([0, 15, 45, 105, 225, 345]);
    expect(outboxRuns).toBe(0);
  });

  it('a good tick after a refused reply resets the back-off', async () => {
    const clock = new ManualClock();
    const { engine, passes } = fakeEngine([null]);
    let refuse = true;
    const daemon = new Daemon({
      engine,
      clock,
      logger,
      afterPass: async () => {
        if (refuse) throw new AuthError('401', 401);
      },
    });
    expect(await passTimes(daemon, clock, passes, 15)).toEqual([0, 15]);
    refuse = false;
    clock.advance(30 * MIN);
    await daemon.tick();
    expect(daemon.health.state).toBe('ok');
    refuse = true;
    const before = passes();
    await daemon.tick();
    expect(passes()).toBe(before + 1);
    // Back to the first wait of the policy: 15 min, not 60.
    clock.advance(15 * MIN - 1);
    await daemon.tick();
    expect(passes()).toBe(before + 1);
    clock.advance(1);
    await daemon.tick();
    expect(passes()).toBe(before + 2);
  });

  it('does not back off after a pass the budget ended, but waits for the next slot', async () => {
    const clock = new ManualClock();
    const { engine, passes } = fakeEngine(['rate_limited']);
    const gate = new BudgetGate({ limits, clock, samples: [], realTimeInterval: false });
    Object.assign(engine, { gate });
    const daemon = new Daemon({ engine, clock, logger });
    const times = await passTimes(daemon, clock, passes, 1);
    expect(times).toEqual([0, 0.25, 0.5, 0.75, 1]);
    expect(daemon.health.state).toBe('ok');
  });
});

describe('code-level options', () => {
  it.each([
    ['concurrency: 0', { concurrency: 0 }, /Expected `concurrency` to be an integer from 1 and up, got `0`/],
    ['concurrency: 1.5', { concurrency: 1.5 }, /`concurrency`.*`1.5`/],
    ['concurrency: NaN', { concurrency: Number.NaN }, /`concurrency`.*`NaN`/],
  ])('BudgetGate refuses %s with a message naming it', (_, options, message) => {
    expect(() => new BudgetGate({ limits, clock: new ManualClock(), samples: [], ...options })).toThrow(message);
  });

  it('SyncEngine and the outbox refuse options that would start no worker or take no row', async () => {
    const base = { db: null, apiUrl: 'http://127.0.0.1:1', apiToken: 't', clock: new ManualClock(), limits, logger };
    expect(() => new SyncEngine({ ...base, concurrency: 0 } as unknown as EngineOptions)).toThrow(/`concurrency`/);
    await expect(deliverOutbox({ ...base, client: null, maxRows: 0 } as unknown as DeliverOptions)).rejects.toThrow(/`maxRows`/);
    await expect(deliverOutbox({ ...base, client: null, leaseMs: -1 } as unknown as DeliverOptions)).rejects.toThrow(/`leaseMs`/);
  });
});
