import { describe, expect, it } from 'vitest';
import { requestQuery } from '../../src/daemon/statusServer.ts';
import { dateValue, localDate, MAX_PERIOD_DAYS, parsePeriod, PeriodError, periodFromQuery } from '../../src/report/period.ts';

/** The report's period, from a query string anyone may send or from the command line: strict, and never a crash. */

const TODAY = '2026-11-23';

describe('parsePeriod', () => {
  it('defaults to the 28 days ending today; an empty value counts as absent', () => {
    expect(parsePeriod({}, TODAY)).toEqual({ from: '2026-10-27', to: '2026-11-23', days: 28 });
    expect(parsePeriod({ from: '', to: '' }, TODAY)).toEqual({ from: '2026-10-27', to: '2026-11-23', days: 28 });
    expect(parsePeriod({ to: '2026-03-01' }, TODAY)).toEqual({ from: '2026-02-02', to: '2026-03-01', days: 28 });
    expect(parsePeriod({ from: '2026-11-23' }, TODAY)).toEqual({ from: '2026-11-23', to: '2026-11-23', days: 1 });
  });

  it('counts days across a leap day and a year end', () => {
    expect(parsePeriod({ from: '2024-02-28', to: '2024-03-01' }, TODAY).days).toBe(3);
    expect(parsePeriod({ from: '2025-12-31', to: '2026-01-01' }, TODAY).days).toBe(2);
  });

  it.each([
    ['2026-02-30', 'from must be a date as YYYY-MM-DD, e.g. 2026-11-23'],
    ['2026-13-01', 'from must be a date as YYYY-MM-DD, e.g. 2026-11-23'],
    ['2026-1-1', 'from must be a date as YYYY-MM-DD, e.g. 2026-11-23'],
    ['2026-11-01T00:00:00Z', 'from must be a date as YYYY-MM-DD, e.g. 2026-11-23'],
    [' 2026-11-01', 'from must be a date as YYYY-MM-DD, e.g. 2026-11-23'],
    ['1969-12-31', 'from must be 1970-01-01 or later'],
    ['0001-01-01', 'from must be 1970-01-01 or later'],
    ['1900-02-29', 'from must be a date as YYYY-MM-DD, e.g. 2026-11-23'],
    ['now', 'from must be a date as YYYY-MM-DD, e.g. 2026-11-23'],
    ["2026-11-01' or 1=1 --", 'from must be a date as YYYY-MM-DD, e.g. 2026-11-23'],
    ['２０２６-11-01', 'from must be a date as YYYY-MM-DD, e.g. 2026-11-23'],
  ])('refuses from=%j', (from, message) => {
    expect(() => parsePeriod({ from }, TODAY)).toThrow(new PeriodError(message));
  });

  it('refuses a period that ends before it starts or lasts more than a year, naming the options as asked', () => {
    expect(() => parsePeriod({ from: '2026-11-02', to: '2026-11-01' }, TODAY)).toThrow(new PeriodError('from must not be after to'));
    expect(() => parsePeriod({ from: '2026-11-02', to: '2026-11-01' }, TODAY, { from: '--from', to: '--to' })).toThrow(
      new PeriodError('--from must not be after --to'),
    );
    expect(() => parsePeriod({ to: 'x' }, TODAY, { from: '--from', to: '--to' })).toThrow(/^--to must be a date/);
    expect(parsePeriod({ from: '2025-11-23', to: '2026-11-23' }, TODAY).days).toBe(MAX_PERIOD_DAYS);
    expect(() => parsePeriod({ from: '2025-11-22', to: '2026-11-23' }, TODAY)).toThrow(
      new PeriodError('the period may be at most 366 days long; this one has 367'),
    );
  });

  it('dateValue takes real calendar dates only', () => {
    expect(dateValue('2024-02-29')).toBe(Date.UTC(2024, 1, 29));
    expect(dateValue('2023-02-29')).toBeNull();
    expect(dateValue('0000-01-01')).toBeNull();
  });

  it('localDate is the calendar date in the time zone', () => {
    const instant = Date.UTC(2026, 10, 23, 23, 30);
    expect(localDate(instant, 'UTC')).toBe('2026-11-23');
    expect(localDate(instant, 'Europe/Berlin')).toBe('2026-11-24');
    expect(localDate(instant, 'America/Los_Angeles')).toBe('2026-11-23');
  });
});

describe('the query string of /report', () => {
  const period = (target: string) => periodFromQuery(requestQuery(target), TODAY);

  it('reads from and to, ignores other parameters and the fragment', () => {
    expect(period('/report?from=2026-11-01&to=2026-11-07&utm_source=mail#top')).toEqual({ from: '2026-11-01', to: '2026-11-07', days: 7 });
    expect(period('http://127.0.0.1:9464/report?to=2026-11-07')).toEqual({ from: '2026-10-11', to: '2026-11-07', days: 28 });
    expect(period('/report')).toEqual({ from: '2026-10-27', to: '2026-11-23', days: 28 });
    expect(period('/report?')).toEqual({ from: '2026-10-27', to: '2026-11-23', days: 28 });
    expect(period('/report?from=2026%2D11%2D01')).toMatchObject({ from: '2026-11-01' });
  });

  it.each([
    ['/report?from=2026-11-01&from=2026-11-02', 'from is given 2 times'],
    ['/report?to=a&to=b&to=c', 'to is given 3 times'],
    ['/report?from=%ZZ', 'from must be a date as YYYY-MM-DD, e.g. 2026-11-23'],
    ['/report?from=%00', 'from must be a date as YYYY-MM-DD, e.g. 2026-11-23'],
    ['/report?from=<script>alert(1)</script>', 'from must be a date as YYYY-MM-DD, e.g. 2026-11-23'],
    [`/report?from=${'9'.repeat(10_000)}`, 'from must be a date as YYYY-MM-DD, e.g. 2026-11-23'],
    ['/report?to=2026-11-07&from=2026-11-08', 'from must not be after to'],
  ])('%s is refused: %s', (target, message) => {
    expect(() => period(target)).toThrow(new PeriodError(message));
  });
});
