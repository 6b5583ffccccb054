import type { BusinessWindow } from '../model/reportSettings.ts';

/**
 * Parsers of the REPORT_* variables: pure, each returning the value or throwing a RangeError whose message completes
 * "VARIABLE=value …" (loadConfig puts the name and value in front).
 */

/**
 * An IANA time zone name as Intl knows it, canonical (`europe/berlin` → `Europe/Berlin`, `US/Pacific` →
 * `America/Los_Angeles`). Offsets and POSIX rules (`+02:00`, `UTC+3`) are refused: PostgreSQL reads the sign of the
 * latter backwards. Whether PostgreSQL knows the name too is checked when it is written (db/repos/reportSettings.ts).
 */
export function parseTimeZone(value: string): string {
  const refused = new RangeError('must be an IANA time zone name, such as Europe/Berlin or UTC');
  if (!/^[A-Za-z][A-Za-z0-9_+\-]*(\/[A-Za-z0-9_+\-]+)*$/.test(value)) throw refused;
  try {
    return new Intl.DateTimeFormat('en', { timeZone: value }).resolvedOptions().timeZone;
  } catch {
    throw refused;
  }
}

const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
const WINDOW = /^([a-z]{3})(?:\s*-\s*([a-z]{3}))?\s+(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})$/i;
export const BUSINESS_HOURS_SHAPE = 'must look like "Mon-Fri 09:00-17:00" (several separated by commas: "Mon-Fri 09:00-17:00, Sat 10:00-14:00")';

/**
 * `Mon-Fri 09:00-17:00`, or several such separated by `,` or `;` (`Mon-Thu 08:00-17:00, Fri 08:00-12:00`). A day range
 * may wrap the week (`Sat-Mon`); a window ends after it opens, at 24:00 at the latest; windows of one day must not
 * overlap. Times are wall-clock times in the report's time zone.
 */
export function parseBusinessHours(value: string): BusinessWindow[] {
  const windows: BusinessWindow[] = [];
  for (const entry of value.split(/[,;]/).map((e) => e.trim())) {
    if (entry === '') continue;
    const m = WINDOW.exec(entry);
    if (!m) throw new RangeError(`${BUSINESS_HOURS_SHAPE}; "${entry}" does not`);
    const from = dayIndex(m[1]!, entry);
    const to = m[2] === undefined ? from : dayIndex(m[2], entry);
    const opens = minutes(m[3]!, m[4]!, entry);
    const closes = minutes(m[5]!, m[6]!, entry);
    if (closes <= opens) throw new RangeError(`"${entry}" closes before it opens (a window cannot pass midnight; split it in two days)`);
    for (let d = from; ; d = (d + 1) % 7) {
      windows.push({ isodow: d + 1, opens: hhmm(opens), closes: hhmm(closes) });
      if (d === to) break;
    }
  }
  if (windows.length === 0) throw new RangeError(BUSINESS_HOURS_SHAPE);
  windows.sort((a, b) => a.isodow - b.isodow || a.opens.localeCompare(b.opens));
  for (let i = 1; i < windows.length; i++) {
    const [a, b] = [windows[i - 1]!, windows[i]!];
    if (a.isodow === b.isodow && b.opens < a.closes) {
      throw new RangeError(`has overlapping windows on ${DAY_NAMES[a.isodow - 1]} (${a.opens}-${a.closes} and ${b.opens}-${b.closes})`);
    }
  }
  return windows;
}

const DAY_NAMES = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] as const;

function dayIndex(name: string, entry: string): number {
  const i = DAYS.indexOf(name.toLowerCase() as (typeof DAYS)[number]);
  if (i === -1) throw new RangeError(`"${entry}": ${JSON.stringify(name)} is not a day (Mon, Tue, Wed, Thu, Fri, Sat, Sun)`);
  return i;
}

function minutes(h: string, m: string, entry: string): number {
  const total = Number(h) * 60 + Number(m);
  if (Number(m) > 59 || total > 24 * 60) throw new RangeError(`"${entry}": ${h}:${m} is not a time of day between 00:00 and 24:00`);
  return total;
}

function hhmm(total: number): string {
  return `${String(Math.floor(total / 60)).padStart(2, '0')}:${String(total % 60).padStart(2, '0')}`;
}

const DURATION = /^(?:(\d+)\s*d)?\s*(?:(\d+)\s*h)?\s*(?:(\d+)\s*m)?\s*(?:(\d+)\s*s)?$/i;
/** The largest duration a threshold may have: what an `integer` column holds, about 68 years. */
const MAX_SECONDS = 2_147_483_647;

/** A positive duration in days, hours, minutes and seconds, largest unit first (`4h`, `2d`, `90m`, `1h30m`), in seconds. */
export function parseDuration(value: string): number {
  const m = DURATION.exec(value.trim());
  const refused = new RangeError('must be a duration such as 90m, 4h, 2d or 1h30m (d, h, m, s)');
  if (!m || value.trim() === '') throw refused;
  const [d, h, min, s] = [m[1], m[2], m[3], m[4]].map((v) => Number(v ?? 0)) as [number, number, number, number];
  const seconds = ((d * 24 + h) * 60 + min) * 60 + s;
  if (seconds <= 0) throw new RangeError('must be longer than 0');
  if (seconds > MAX_SECONDS) throw new RangeError(`must be at most ${MAX_SECONDS} seconds`);
  return seconds;
}
