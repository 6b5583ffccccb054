import { isoMicros } from '../time.ts';
import type { Random } from './random.ts';

/**
 * Event instants are epoch microseconds (a safe integer until the year 2255). The API shows six fractional digits, and
 * clients that keep milliseconds only must be caught out, so every stamp gets random sub-millisecond digits and none
 * is a whole second.
 */

export const MICROS_PER_MS = 1000;

/**
 * The API form `YYYY-MM-DDTHH:MM:SS.ffffffZ` of epoch microseconds, as `isoMicros` writes it, but faster and as one
 * flat string: a model draws and keeps thousands of these, and a concatenated one holds four strings (and their parts).
 */
export function formatMicros(us: number): string {
  const seconds = Math.floor(us / 1_000_000);
  const micros = us - seconds * 1_000_000;
  const days = Math.floor(seconds / 86_400);
  const secondOfDay = seconds - days * 86_400;
  const [year, month, day] = civilDate(days);
  if (year < 0 || year > 9999) return isoMicros(Math.floor(us / MICROS_PER_MS), us % MICROS_PER_MS);
  digits(0, 4, year);
  digits(5, 2, month);
  digits(8, 2, day);
  digits(11, 2, Math.floor(secondOfDay / 3600));
  digits(14, 2, Math.floor(secondOfDay / 60) % 60);
  digits(17, 2, secondOfDay % 60);
  digits(20, 6, micros);
  return String.fromCharCode.apply(null, CODES);
}

/** The character codes of the stamp being written; the separators stay in place. */
const CODES = [...'0000-00-00T00:00:00.000000Z'].map((c) => c.charCodeAt(0));

function digits(at: number, width: number, value: number): void {
  for (let i = at + width - 1; i >= at; i--, value = Math.floor(value / 10)) CODES[i] = 0x30 + (value % 10);
}

/** Year, month (1–12) and day of a count of days since 1970-01-01 (proleptic Gregorian; Hinnant's civil_from_days). */
function civilDate(days: number): [number, number, number] {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const month = mp < 10 ? mp + 3 : mp - 9;
  return [yoe + era * 400 + (month <= 2 ? 1 : 0), month, doy - Math.floor((153 * mp + 2) / 5) + 1];
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
