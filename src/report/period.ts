import { DAY_MS } from '../time.ts';

/**
 * The period a report covers: whole days in the report's time zone, both ends included. It comes from outside — a
 * query string anyone on the network may send, or the command line — so it is parsed strictly, and every way to get
 * it wrong is a `PeriodError` with a message for a person, never an exception from deeper down.
 */

export interface ReportPeriod {
  /** First day, `YYYY-MM-DD`. */
  from: string;
  /** Last day, `YYYY-MM-DD`, included. */
  to: string;
  /** Days in the period, both ends counted. */
  days: number;
}

/** Days a report shows when no `from` is given: four weeks up to `to`. */
export const DEFAULT_PERIOD_DAYS = 28;
/** The longest period: one year. Longer ones would draw unreadable charts and cost more to query. */
export const MAX_PERIOD_DAYS = 366;

export class PeriodError extends Error {
  override name = 'PeriodError';
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/**
 * Why `text` is not a date a period may start or end on (`name` names it: `--from`), or null when it is one. A real
 * calendar date before 1970 is told so, not as a bad format.
 */
export function dateProblem(text: string, name: string, today: string): string | null {
  if (dateValue(text) !== null) return null;
  const m = DATE.exec(text);
  if (m && Number(m[1]) < 1970 && isCalendarDate(Number(m[1]), Number(m[2]), Number(m[3]))) return `${name} must be 1970-01-01 or later`;
  return `${name} must be a date as YYYY-MM-DD, e.g. ${today}`;
}

/** Whether the day exists in the proleptic Gregorian calendar (1900-02-29 does not). */
function isCalendarDate(year: number, month: number, day: number): boolean {
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  return d.getUTCFullYear() === year && d.getUTCMonth() === month - 1 && d.getUTCDate() === day;
}

/** Epoch ms of midnight UTC of a `YYYY-MM-DD` calendar date from 1970 on; null when the text is not one (2026-02-30 is not). */
export function dateValue(text: string): number | null {
  const m = DATE.exec(text);
  if (!m) return null;
  const [, y, mo, d] = m;
  const year = Number(y);
  if (year < 1970) return null;
  const ms = Date.UTC(year, Number(mo) - 1, Number(d));
  // Date.UTC rolls an impossible date over (February 30th → March 2nd): the round trip catches it.
  return new Date(ms).toISOString().slice(0, 10) === text ? ms : null;
}

export function dateText(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The calendar date at `now` in an IANA time zone, `YYYY-MM-DD`. */
export function localDate(now: number, timeZone: string): string {
  // en-CA writes dates as YYYY-MM-DD.
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(now);
}

/**
 * The period from optional `from` and `to` dates (`YYYY-MM-DD`; empty counts as absent). `to` defaults to `today`,
 * `from` to 27 days before `to`. Refused: anything but a real calendar date, `from` after `to`, more than a year.
 */
export function parsePeriod(
  input: { from?: string | undefined; to?: string | undefined },
  today: string,
  /** How the messages name the two dates (`--from` on the command line). */
  names: { from: string; to: string } = { from: 'from', to: 'to' },
): ReportPeriod {
  const read = (name: 'from' | 'to'): number | null => {
    const text = input[name];
    if (text === undefined || text === '') return null;
    const problem = dateProblem(text, names[name], today);
    if (problem !== null) throw new PeriodError(problem);
    return dateValue(text)!;
  };
  const toMs = read('to') ?? dateValue(today)!;
  const fromMs = read('from') ?? toMs - (DEFAULT_PERIOD_DAYS - 1) * DAY_MS;
  if (fromMs > toMs) throw new PeriodError(`${names.from} must not be after ${names.to}`);
  const days = Math.round((toMs - fromMs) / DAY_MS) + 1;
  if (days > MAX_PERIOD_DAYS) throw new PeriodError(`the period may be at most ${MAX_PERIOD_DAYS} days long; this one has ${days}`);
  return { from: dateText(fromMs), to: dateText(toMs), days };
}

/**
 * The period asked for in a query string (`?from=&to=`). Other parameters are ignored; `from` or `to` given twice is
 * refused rather than guessed at.
 */
export function periodFromQuery(query: URLSearchParams, today: string): ReportPeriod {
  const one = (name: 'from' | 'to'): string | undefined => {
    const values = query.getAll(name);
    if (values.length > 1) throw new PeriodError(`${name} is given ${values.length} times`);
    return values[0];
  };
  return parsePeriod({ from: one('from'), to: one('to') }, today);
}
