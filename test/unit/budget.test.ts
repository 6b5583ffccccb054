import { describe, expect, it } from 'vitest';
import type { LedgerSample } from '../../src/model/ledgerSample.ts';
import { budgetAt } from '../../src/sync/budget.ts';
import { DAY_MS, MINUTE_MS } from '../../src/time.ts';

const T0 = Date.UTC(2026, 0, 5, 12, 0, 0);
const limits = { daily: 1440, minute: 60, reserve: 0.1 };
const at = (ms: number, remaining: number | null = null): LedgerSample => ({ at: ms, remaining, limit: remaining === null ? null : 60 });

describe('budgetAt', () => {
  it('keeps the reserve of both limits', () => {
    const b = budgetAt(limits, [], T0);
    expect(b).toMatchObject({ dailyAllowed: 1296, dailyLeft: 1296, minuteAllowed: 54, minuteLeft: 54, nextSlotAt: T0 });
  });

  it.each([
    ['a request just inside the 24 h window counts', T0 - DAY_MS + 1, 1],
    ['a request exactly 24 h old no longer counts', T0 - DAY_MS, 0],
    ['a request from a minute ago counts in the day only', T0 - MINUTE_MS - 1, 1],
  ])('%s', (_, when, used) => {
    expect(budgetAt(limits, [at(when)], T0).dailyUsed).toBe(used);
  });

  it.each([
    [1440, 0.9, 144],
    [1440, 0.3, 1008],
    [1440, 0.1, 1296],
    [100, 0.07, 93],
    [60, 0.15, 51],
  ])('keeps %i × (1 − %f) = %i whole, decimals as they were meant', (daily, reserve, allowed) => {
    expect(budgetAt({ daily, minute: 60, reserve }, [], T0).dailyAllowed).toBe(allowed);
  });

  it('refuses when the rolling day is spent and says when the oldest request frees a slot', () => {
    const samples = Array.from({ length: 1296 }, (_, i) => at(T0 - DAY_MS + 1000 + i * 60_000));
    const b = budgetAt(limits, samples, T0);
    expect(b.dailyLeft).toBe(0);
    expect(b.nextSlotAt).toBe(samples[0]!.at + DAY_MS + 1);
  });

  it('refuses when the minute is spent, until its oldest request is a minute old', () => {
    const samples = Array.from({ length: 54 }, (_, i) => at(T0 - 50_000 + i * 100));
    const b = budgetAt(limits, samples, T0);
    expect(b.minuteLeft).toBe(0);
    expect(b.nextSlotAt).toBe(T0 - 50_000 + MINUTE_MS + 1);
  });

  it('believes the server when another client uses the token', () => {
    // We sent 2 requests this minute, but the server says only 30 of 60 remain: someone else sent 28.
    const samples = [at(T0 - 20_000, 40), at(T0 - 10_000, 30)];
    const b = budgetAt(limits, samples, T0);
    expect(b.minuteAllowed).toBe(2 + (30 - 6));
    expect(b.foreignPerDay).toBeGreaterThan(0);
    expect(b.dailyAllowed).toBeLessThan(1296);
  });

  it('gives the token to another client that uses it all day', () => {
    // One sample a minute for 6 h, each showing 2 requests of someone else's: about 2,880 a day, more than the limit.
    const samples = Array.from({ length: 360 }, (_, i) => at(T0 - 6 * 3_600_000 + i * MINUTE_MS, 57));
    const b = budgetAt(limits, samples, T0);
    expect(b.foreignPerDay).toBe(1440);
    expect(b.dailyAllowed).toBe(0);
  });

  it('takes no 429 for another client (its Retry-After is obeyed instead)', () => {
    const b = budgetAt(limits, [{ at: T0 - 10_000, remaining: 0, limit: 60, status: 429 }], T0);
    expect(b.foreignPerDay).toBe(0);
    expect(b.dailyAllowed).toBe(1296);
  });

  it('does not let one burst of another client take the day away', () => {
    const b = budgetAt(limits, [at(T0 - 10_000, 10)], T0);
    // 49 foreign requests in one sampled minute, diluted over 4 h of minutes: about 294 a day, 144 of them reserved.
    expect(b.foreignPerDay).toBe(294);
    expect(b.dailyAllowed).toBe(1296 - (294 - 144));
    expect(b.minuteLeft).toBe(Math.max(0, 1 + (10 - 6) - 1));
  });

  it("believes no more than a minute's limit of use in a minute, whatever the headers claim", () => {
    // A gateway's own counters: 99,999 requests by someone else. At most 60 can have been sent, 59 of them not ours.
    const b = budgetAt(limits, [{ at: T0 - 10_000, remaining: 0, limit: 100_000 }], T0);
    expect(b.foreignPerDay).toBe(354);
    expect(b.dailyAllowed).toBe(1296 - (354 - 144));
  });

  it('sees no other client when the server agrees with the ledger', () => {
    const samples = [at(T0 - 20_000, 59), at(T0 - 10_000, 58)];
    const b = budgetAt(limits, samples, T0);
    expect(b.foreignPerDay).toBe(0);
    expect(b.dailyAllowed).toBe(1296);
  });
});
