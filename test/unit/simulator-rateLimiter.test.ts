import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { RateLimiter } from '../../src/simulator/rateLimiter.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** Sends `count` requests `gapMs` apart, returning how many were accepted. */
function burst(limiter: RateLimiter, clock: ManualClock, count: number, gapMs = 0): number {
  let accepted = 0;
  for (let i = 0; i < count; i++) {
    if (limiter.consume('token', clock.now()).allowed) accepted++;
    clock.advance(gapMs);
  }
  return accepted;
}

describe('RateLimiter, per minute', () => {
  it('counts down x-ratelimit-remaining and rejects the 61st request with the seconds left in the window', () => {
    const clock = new ManualClock();
    const limiter = new RateLimiter();
    expect(limiter.consume('token', clock.now())).toEqual({ allowed: true, remaining: 59, retryAfterSec: 0 });
    clock.advance(10_500);
    expect(burst(limiter, clock, 59)).toBe(59);
    expect(limiter.consume('token', clock.now())).toEqual({ allowed: false, remaining: 0, retryAfterSec: 50 });
  });

  it('opens the window at the first request, not at a clock minute, and a new one after it ends', () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 5, 8, 0, 45));
    const limiter = new RateLimiter({ minuteLimit: 3 });
    expect(burst(limiter, clock, 3)).toBe(3);
    // 08:01:00 is a new clock minute but the same window (opened at 08:00:45).
    clock.advance(15_000);
    expect(limiter.consume('token', clock.now()).allowed).toBe(false);
    clock.set(Date.UTC(2026, 0, 5, 8, 1, 45));
    expect(limiter.consume('token', clock.now())).toEqual({ allowed: true, remaining: 2, retryAfterSec: 0 });
  });

  it('does not count rejected requests', () => {
    const clock = new ManualClock();
    const limiter = new RateLimiter({ minuteLimit: 2, dailyLimit: 5 });
    expect(burst(limiter, clock, 50)).toBe(2);
    clock.advance(MINUTE);
    expect(burst(limiter, clock, 2)).toBe(2);
  });

  it('keeps users apart', () => {
    const limiter = new RateLimiter({ minuteLimit: 1 });
    expect(limiter.consume('a', 0).allowed).toBe(true);
    expect(limiter.consume('b', 0).allowed).toBe(true);
    expect(limiter.consume('a', 0).allowed).toBe(false);
  });

  it('rejects limits that are not whole numbers ≥ 1', () => {
    expect(() => new RateLimiter({ minuteLimit: 0 })).toThrow(RangeError);
    expect(() => new RateLimiter({ dailyLimit: 1.5 })).toThrow(RangeError);
  });
});

describe('RateLimiter, per rolling 24 h', () => {
  it('allows 1,440 requests in 24 h and then waits for the oldest to age out', () => {
    const clock = new ManualClock();
    const limiter = new RateLimiter();
    const start = clock.now();
    // 60 per hour for 24 hours: the minute limit is never the constraint.
    expect(burst(limiter, clock, 1_440, MINUTE)).toBe(1_440);
    expect(clock.now()).toBe(start + 24 * HOUR);
    // The first request (at `start`) has just aged out: exactly one slot.
    expect(limiter.consume('token', clock.now()).allowed).toBe(true);
    const rejected = limiter.consume('token', clock.now());
    expect(rejected).toEqual({ allowed: false, remaining: 0, retryAfterSec: 60 });
    clock.advance(60_000);
    expect(limiter.consume('token', clock.now()).allowed).toBe(true);
  });

  it('reports the later of the two waits when both limits are hit', () => {
    const clock = new ManualClock();
    const limiter = new RateLimiter({ minuteLimit: 5, dailyLimit: 5 });
    expect(burst(limiter, clock, 5)).toBe(5);
    clock.advance(30_000);
    expect(limiter.consume('token', clock.now()).retryAfterSec).toBe(24 * 3600 - 30);
  });

  it('handles days of traffic in virtual time', () => {
    const clock = new ManualClock();
    const limiter = new RateLimiter({ minuteLimit: 1_000_000, dailyLimit: 1_000 });
    // One request a second for 200,000 s: 1,000 accepted at the start of each of the three 24 h windows.
    expect(burst(limiter, clock, 200_000, 1_000)).toBe(3_000);
  });
});
