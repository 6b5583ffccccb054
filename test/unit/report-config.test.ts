import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { parseBusinessHours, parseDuration, parseTimeZone } from '../../src/config/reportSettings.ts';
import { ConfigError } from '../../src/errors.ts';

/** REPORT_TIMEZONE, REPORT_BUSINESS_HOURS and REPORT_SLA_*: parsed once, every bad value reported with its variable. */

const load = (env: Record<string, string>) => loadConfig(env, { dotenv: false });

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    load(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('loadConfig accepted it');
}

describe('report settings in the configuration', () => {
  it('defaults to UTC, no business hours and no SLA targets', () => {
    expect(load({}).report).toEqual({
      timeZone: 'UTC',
      businessHours: null,
      businessWindows: null,
      slaFirstResponseSeconds: null,
      slaResolutionSeconds: null,
    });
  });

  it('parses all four, the time zone made canonical', () => {
    expect(
      load({
        REPORT_TIMEZONE: 'europe/berlin',
        REPORT_BUSINESS_HOURS: ' Mon-Fri 09:00-17:00 ',
        REPORT_SLA_FIRST_RESPONSE: '4h',
        REPORT_SLA_RESOLUTION: '2d',
      }).report,
    ).toEqual({
      timeZone: 'Europe/Berlin',
      businessHours: 'Mon-Fri 09:00-17:00',
      businessWindows: [1, 2, 3, 4, 5].map((isodow) => ({ isodow, opens: '09:00', closes: '17:00' })),
      slaFirstResponseSeconds: 4 * 3600,
      slaResolutionSeconds: 2 * 86400,
    });
  });

  it('reports every bad value at once, each naming its variable', () => {
    const problems = problemsOf({
      REPORT_TIMEZONE: 'Mars/Olympus',
      REPORT_BUSINESS_HOURS: 'weekdays 9-5',
      REPORT_SLA_FIRST_RESPONSE: '4 hours',
      REPORT_SLA_RESOLUTION: '0h',
    });
    expect(problems).toHaveLength(4);
    expect(problems[0]).toBe('REPORT_TIMEZONE="Mars/Olympus" must be an IANA time zone name, such as Europe/Berlin or UTC');
    expect(problems[1]).toMatch(/^REPORT_BUSINESS_HOURS="weekdays 9-5" must look like "Mon-Fri 09:00-17:00"/);
    expect(problems[2]).toBe('REPORT_SLA_FIRST_RESPONSE="4 hours" must be a duration such as 90m, 4h, 2d or 1h30m (d, h, m, s)');
    expect(problems[3]).toBe('REPORT_SLA_RESOLUTION="0h" must be longer than 0');
  });

  it('an empty value is unset', () => {
    expect(load({ REPORT_TIMEZONE: '', REPORT_BUSINESS_HOURS: ' ', REPORT_SLA_RESOLUTION: '' }).report.timeZone).toBe('UTC');
  });
});

describe('parseTimeZone', () => {
  it.each([
    ['UTC', 'UTC'],
    ['Europe/Berlin', 'Europe/Berlin'],
    ['america/new_york', 'America/New_York'],
    ['Etc/GMT+5', 'Etc/GMT+5'],
  ])('%s → %s', (given, canonical) => expect(parseTimeZone(given)).toBe(canonical));

  // Offsets and POSIX rules: PostgreSQL would read 'UTC+3' as three hours west of UTC.
  it.each(['UTC+3', '+02:00', 'Europe/Atlantis', '', 'Europe/Berlin; drop table tickets'])('refuses %j', (value) =>
    expect(() => parseTimeZone(value)).toThrow(/IANA time zone/),
  );
});

describe('parseBusinessHours', () => {
  it('takes several windows, day ranges that wrap the week, and 24:00', () => {
    expect(parseBusinessHours('Mon-Thu 08:00-12:00, mon-thu 13:00-17:00; Fri 8:00-13:30, Sat-Sun 00:00-24:00')).toEqual([
      ...[1, 2, 3, 4].flatMap((isodow) => [
        { isodow, opens: '08:00', closes: '12:00' },
        { isodow, opens: '13:00', closes: '17:00' },
      ]),
      { isodow: 5, opens: '08:00', closes: '13:30' },
      { isodow: 6, opens: '00:00', closes: '24:00' },
      { isodow: 7, opens: '00:00', closes: '24:00' },
    ]);
    expect(parseBusinessHours('Sat-Mon 10:00-14:00').map((w) => w.isodow)).toEqual([1, 6, 7]);
  });

  it.each([
    ['Mon-Fri', /must look like/],
    ['Mon-Fri 9-17', /must look like/],
    ['Mon-Fre 09:00-17:00', /"Fre" is not a day/],
    ['Mon 17:00-09:00', /closes before it opens/],
    ['Mon 09:00-09:00', /closes before it opens/],
    ['Mon 09:00-24:30', /not a time of day/],
    ['Mon 09:60-10:00', /not a time of day/],
    ['Mon-Fri 09:00-17:00, Fri 16:00-18:00', /overlapping windows on Fri/],
    [',', /must look like/],
  ])('refuses %j', (value, message) => expect(() => parseBusinessHours(value)).toThrow(message));
});

describe('parseDuration', () => {
  it.each([
    ['90m', 5400],
    ['4h', 14400],
    ['2d', 172800],
    ['1h30m', 5400],
    ['1d 2h 3m 4s', 93784],
    ['45S', 45],
  ])('%s = %i s', (value, seconds) => expect(parseDuration(value)).toBe(seconds));

  it.each(['', '4', 'h', '4 hours', '30m1h', '-1h', '1.5h', '0m', '100000d'])('refuses %j', (value) =>
    expect(() => parseDuration(value)).toThrow(/duration|longer than 0|at most/),
  );
});
