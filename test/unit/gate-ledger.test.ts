import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { BudgetGate } from '../../src/sync/gate.ts';

const T0 = Date.UTC(2026, 0, 5, 12, 0, 0);
const limits = { daily: 1440, minute: 60, reserve: 0.1 };
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
