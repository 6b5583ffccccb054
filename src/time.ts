/**
 * Timestamps with microseconds. The API gives `YYYY-MM-DDTHH:MM:SS.ffffffZ`; JavaScript's Date keeps milliseconds
 * only, so instants travel as strings and are compared in their canonical form, never through Date.
 */

/** Durations in milliseconds, the unit of every instant and interval in the code (SQL's epoch is in seconds). */
export const SECOND_MS = 1_000;
export const MINUTE_MS = 60 * SECOND_MS;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;
/**
 * A clock found this far behind where it was, or behind the newest instant the mirror recorded, was set back (see
 * db/repos/clockSetBack.ts); less is ordinary skew between hosts or timers.
 */
export const CLOCK_SET_BACK_MS = MINUTE_MS;

const TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/** Epoch microseconds of a timestamp string, or null when it is not one. Strings without an offset are UTC. */
export function toEpochMicros(value: string): bigint | null {
  const m = TIMESTAMP.exec(value.trim());
  if (!m) return null;
  const [, y, mo, d, h, mi, s, frac = '', off = 'Z'] = m;
  // No such instant (a 30 February, a month 13, an hour 24, an offset of +99:99) is no timestamp: Date rolled each over
  // into another instant, stored without a word. A leap second (:60) is the next minute's first, as PostgreSQL has it.
  const offsetDigits = off.slice(1).replace(':', '');
  if (+mo! < 1 || +mo! > 12 || +d! < 1 || +d! > daysInMonth(+y!, +mo!) || +h! > 23 || +mi! > 59 || +s! > 60) return null;
  if (offsetDigits !== '' && (Number(offsetDigits.slice(0, 2)) > 15 || Number(offsetDigits.slice(2, 4) || '0') > 59)) return null;
  // Not Date.UTC(y, …): it reads the years 0–99 as 1900–1999 (0050 would be stored as 1950).
  const date = new Date(0);
  date.setUTCFullYear(+y!, +mo! - 1, +d!);
  date.setUTCHours(+h!, +mi!, +s!);
  const seconds = date.getTime() / 1000;
  if (Number.isNaN(seconds)) return null;
  let offsetSeconds = 0;
  if (off.toUpperCase() !== 'Z') {
    const sign = off.startsWith('-') ? -1 : 1;
    offsetSeconds = sign * (Number(offsetDigits.slice(0, 2)) * 3600 + Number(offsetDigits.slice(2, 4) || '0') * 60);
  }
  const micros = (BigInt(seconds) - BigInt(offsetSeconds)) * 1_000_000n + BigInt((frac + '000000').slice(0, 6));
  // Only the instants of the years 0001–9999: the canonical form has four digits of year, and PostgreSQL refuses the
  // year 0 (an offset can push 0001-01-01 or 9999-12-31 over either edge). Outside, it is no timestamp the mirror stores.
  return micros >= MIN_MICROS && micros <= MAX_MICROS ? micros : null;
}

/** 0001-01-01T00:00:00.000000Z and 9999-12-31T23:59:59.999999Z, in epoch microseconds. */
const MIN_MICROS = -62_135_596_800_000_000n;
const MAX_MICROS = 253_402_300_799_999_999n;

/** The canonical `YYYY-MM-DDTHH:MM:SS.ffffffZ` form of epoch microseconds. */
export function fromEpochMicros(micros: bigint): string {
  const sub = ((micros % 1_000_000n) + 1_000_000n) % 1_000_000n;
  const seconds = (micros - sub) / 1_000_000n;
  const base = new Date(Number(seconds) * 1000).toISOString().slice(0, 19);
  return `${base}.${String(sub).padStart(6, '0')}Z`;
}

/** Canonical form of any timestamp string (API or PostgreSQL output); null stays null; junk throws. */
export function canonicalTimestamp(value: string): string;
export function canonicalTimestamp(value: string | null): string | null;
export function canonicalTimestamp(value: string | null): string | null {
  if (value === null) return null;
  const micros = toEpochMicros(value);
  if (micros === null) throw new TypeError(`not a timestamp: ${JSON.stringify(value)}`);
  return fromEpochMicros(micros);
}

/** The canonical form of a timestamp the service gave, or null when it is none (a later detail fetch will tell). */
export function timestampOrNull(value: string): string | null {
  return toEpochMicros(value) === null ? null : canonicalTimestamp(value);
}

/** The canonical form of an epoch-millisecond instant plus extra microseconds (0–999). */
export function isoMicros(epochMs: number, extraMicros = 0): string {
  return fromEpochMicros(BigInt(Math.floor(epochMs)) * 1000n + BigInt(extraMicros));
}

const API_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/** Whether a string is a timestamp in exactly the API's shape. */
export function isApiTimestamp(value: string): boolean {
  return API_TIMESTAMP.test(value) && toEpochMicros(value) !== null;
}

/**
 * Whether a string is in the API's shape and names a real instant in it, so that `canonicalTimestamp` would return it
 * unchanged — without its cost, for lists of 100,000. An impossible date (2026-02-30) and the year 0000 are no
 * timestamps at all.
 */
export function isCanonicalApiTimestamp(value: string): boolean {
  if (value.length !== 27 || !API_TIMESTAMP.test(value)) return false;
  const year = Number(value.slice(0, 4));
  const month = Number(value.slice(5, 7));
  const day = Number(value.slice(8, 10));
  return (
    year >= 1 &&
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysInMonth(year, month) &&
    Number(value.slice(11, 13)) < 24 &&
    Number(value.slice(14, 16)) < 60 &&
    Number(value.slice(17, 19)) < 60
  );
}

function daysInMonth(year: number, month: number): number {
  if (month !== 2) return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
}
