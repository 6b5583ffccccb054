import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { requestUsage } from '../../src/model/plannerHistory.ts';
import { BudgetGate } from '../../src/sync/gate.ts';

const T0 = Date.UTC(2026, 0, 5, 12, 0, 0);
const HOUR = 3_600_000;
const limits = { daily: 1440, minute: 60, reserve: 0.1 };
/** 24 zeros, with `n` at each index `k` of `at`. */
const spikes = (at: Array<[number, number]>) => Array.from({ length: 24 }, (_, k) => at.filter(([i]) => i === k).reduce((sum, [, n]) => sum + n, 0));
const gateAfter = (statuses: number[], lastAt: number) =>
  new BudgetGate({
    limits,
    clock: new ManualClock(T0),
    realTimeInterval: false,
    samples: statuses.map((status, i) => ({ at: lastAt - (statuses.length - 1 - i) * 1_000, remaining: null, limit: null, status })),
  });

describe('BudgetGate: the service\'s 429s at the end of the ledger', () => {
  it('hold a new process back: a minute after a 429 without Retry-After, longer after several in a row', () => {
    expect(gateAfter([200, 429], T0 - 10_000).throttledUntil()).toBe(T0 - 10_000 + 60_000);
    // 5 in a row: the back-off of the fifth (15 s doubling: 240 s) beyond the minute.
    expect(gateAfter([429, 429, 429, 429, 429], T0 - 10_000).throttledUntil()).toBe(T0 - 10_000 + 240_000);
    expect(gateAfter([429, 429, 200], T0 - 10_000).throttledUntil()).toBeNull();
  });

  it('hold it back 15 min at most, however many there are (rows a user forged into api_requests included)', () => {
    const until = gateAfter(Array<number>(1_440).fill(429), T0).throttledUntil();
    expect(until).toBe(T0 + 15 * 60_000);
  });

  it('a wait long over (the process was down since) holds nothing back', () => {
    expect(gateAfter([429, 429, 429], T0 - 2 * 3_600_000).throttledUntil()).toBeNull();
    expect(gateAfter([429], T0 - 2 * 3_600_000).snapshot().minuteLeft).toBeGreaterThan(0);
  });
});

describe('BudgetGate.sentAt: the requests the planner counts are those the budget counts', () => {
  it('the ledger\'s samples, the request in flight, and what it noted; the planner buckets them as the budget spends', async () => {
    const clock = new ManualClock(T0);
    const gate = new BudgetGate({ limits, clock, realTimeInterval: false, samples: [{ at: T0 - 23 * HOUR, remaining: null, limit: null }] });
    let finish!: () => void;
    const sending = gate.run('detail', () => new Promise<void>((resolve) => (finish = resolve)));
    await new Promise((resolve) => setImmediate(resolve));
    expect(gate.sentAt().sort()).toEqual([T0 - 23 * HOUR, T0]);
    // In flight, it is spent already: in the current hour, freeing in the last.
    expect(requestUsage(gate.sentAt(), T0 + 1)).toEqual({ freeing: spikes([[1, 1], [23, 1]]), sentThisHour: 1, backgroundThisHour: 0, nextExpiryAt: T0 + HOUR });
    gate.note({ at: T0, method: 'GET', path: '/x', status: 200, durationMs: 5, kind: 'detail', ratelimitRemaining: 50, ratelimitLimit: 60 });
    finish();
    await sending;
    expect(gate.sentAt()).toEqual([T0 - 23 * HOUR, T0]);
    // 24 h on, the older one has left the window, and the planner no longer counts it either.
    expect(requestUsage(gate.sentAt(), T0 + HOUR + 1)).toEqual({ freeing: spikes([[23, 1]]), sentThisHour: 0, backgroundThisHour: 0, nextExpiryAt: T0 + 24 * HOUR });
  });
});

describe('BudgetGate.backgroundSentAt: the pace of revalidation counts background\'s own requests', () => {
  it.each([
    { kind: 'revalidate', background: true },
    { kind: 'backfill', background: true },
    { kind: 'detail', background: false },
    { kind: 'list_open', background: false },
    { kind: 'reply', background: false },
  ] as const)('a $kind request, in flight and once noted: background $background', async ({ kind, background }) => {
    const clock = new ManualClock(T0);
    const samples = [
      { at: T0 - 2 * HOUR, remaining: null, limit: null, kind: 'revalidate' },
      { at: T0 - HOUR, remaining: null, limit: null, kind: 'list_open' },
      // A ledger row without a kind (written before kinds were kept) is not background.
      { at: T0 - HOUR + 1, remaining: null, limit: null, kind: null },
    ];
    const gate = new BudgetGate({ limits, clock, realTimeInterval: false, samples });
    clock.set(T0 + 1);
    let finish!: () => void;
    const sending = gate.run(kind, () => new Promise<void>((resolve) => (finish = resolve)));
    await new Promise((resolve) => setImmediate(resolve));
    const expected = background ? [T0 - 2 * HOUR, T0 + 1] : [T0 - 2 * HOUR];
    expect(gate.backgroundSentAt()).toEqual(expected);
    expect(requestUsage(gate.sentAt(), T0 + 2, gate.backgroundSentAt())).toMatchObject({ sentThisHour: 1, backgroundThisHour: background ? 1 : 0 });
    gate.note({ at: T0 + 1, method: 'GET', path: '/x', status: 200, durationMs: 5, kind, ratelimitRemaining: 50, ratelimitLimit: 60 });
    finish();
    await sending;
    expect(gate.backgroundSentAt()).toEqual(expected);
    // An hour on, the request is no longer the current hour's.
    expect(requestUsage(gate.sentAt(), T0 + HOUR, gate.backgroundSentAt()).backgroundThisHour).toBe(0);
  });
});
