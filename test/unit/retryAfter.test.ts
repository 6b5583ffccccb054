import { describe, expect, it } from 'vitest';
import { retryAfterMs } from '../../src/api/answers.ts';

const AT = Date.UTC(2026, 0, 5, 12, 0, 0);

describe('retryAfterMs: how long a 429 asks to wait', () => {
  it.each([
    ['delta-seconds', '30', 30_000],
    ['an HTTP date an hour after the answer (RFC 9110 IMF-fixdate)', 'Mon, 05 Jan 2026 13:00:00 GMT', 3_600_000],
    ['the obsolete RFC 850 form', 'Monday, 05-Jan-26 12:02:00 GMT', 120_000],
    ['a date already past: no wait', 'Mon, 05 Jan 2026 11:00:00 GMT', 0],
    ['a date a year away: a day at most', 'Tue, 05 Jan 2027 12:00:00 GMT', 86_400_000],
    ['nothing', undefined, 60_000],
    ['garbage', 'soon', 60_000],
    ['a negative number', '-5', 60_000],
    ['a date that is none', 'Mon, 45 Foo 2026 99:00:00 GMT', 60_000],
  ])('%s', (_, header, ms) => {
    expect(retryAfterMs(header === undefined ? {} : { 'retry-after': header }, AT)).toBe(ms);
  });
});
