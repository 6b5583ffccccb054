import { isoMicros } from '../time.ts';
import type { Random } from './random.ts';

/**
 * Event instants are epoch microseconds (a safe integer until the year 2255). The API shows six fractional digits, and
 * clients that keep milliseconds only must be caught out, so every stamp gets random sub-millisecond digits and none
 * is a whole second.
 */

export const MICROS_PER_MS = 1000;

/** The API form `YYYY-MM-DDTHH:MM:SS.ffffffZ` of epoch microseconds. */
export function formatMicros(us: number): string {
  return isoMicros(Math.floor(us / MICROS_PER_MS), us % MICROS_PER_MS);
}

/**
 * The instant of an event that happens at `nowMs` on a ticket whose latest event was at `afterUs`.
 * Invariant: the result is strictly after `afterUs`, so one ticket's events keep their order even when many share one
 * millisecond of a paused ManualClock.
 */
export function nextStamp(nowMs: number, afterUs: number, rng: Random): number {
  return avoidWholeSecond(Math.max(Math.floor(nowMs) * MICROS_PER_MS + rng.int(1, 999), afterUs + rng.int(1, 999)));
}

/** Nudges a `.000000` instant by one microsecond, keeping it in order with anything before it. */
export function avoidWholeSecond(us: number): number {
  return us % 1_000_000 === 0 ? us + 1 : us;
}
