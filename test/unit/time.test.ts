import { describe, expect, it } from 'vitest';
import { canonicalTimestamp, isApiTimestamp, isCanonicalApiTimestamp, isoMicros, toEpochMicros } from '../../src/time.ts';

describe('timestamps with microseconds', () => {
  it.each([
    ['2024-05-01T10:20:30.123456Z', '2024-05-01T10:20:30.123456Z'],
    ['2024-05-01 10:20:30.123456+00', '2024-05-01T10:20:30.123456Z'],
    ['2024-05-01 12:20:30.1+02', '2024-05-01T10:20:30.100000Z'],
    ['2024-05-01 05:50:30.000001-04:30', '2024-05-01T10:20:30.000001Z'],
    ['2024-05-01T10:20:30Z', '2024-05-01T10:20:30.000000Z'],
    ['1969-12-31T23:59:59.999999Z', '1969-12-31T23:59:59.999999Z'],
  ])('%s is the instant %s', (input, canonical) => {
    expect(canonicalTimestamp(input)).toBe(canonical);
  });

  it('orders instants that differ by one microsecond', () => {
    expect(toEpochMicros('2024-05-01T10:20:30.123457Z')! - toEpochMicros('2024-05-01T10:20:30.123456Z')!).toBe(1n);
  });

  it('rejects what is not a timestamp', () => {
    expect(() => canonicalTimestamp('yesterday')).toThrow(/not a timestamp/);
    expect(isApiTimestamp('2024-05-01T10:20:30.123Z')).toBe(false);
    expect(isApiTimestamp(isoMicros(Date.UTC(2024, 4, 1), 7))).toBe(true);
  });

  it('tells a canonical API timestamp from one Date.UTC would roll over, which is no timestamp at all', () => {
    for (const value of [isoMicros(Date.UTC(2024, 1, 29, 23, 59, 59), 999), '2026-12-31T00:00:00.000001Z', '0099-01-01T00:00:00.000000Z']) {
      expect(isCanonicalApiTimestamp(value)).toBe(true);
      expect(canonicalTimestamp(value)).toBe(value);
    }
    for (const value of ['2026-02-29T10:00:00.000000Z', '2026-04-31T10:00:00.000000Z', '2026-01-01T24:00:00.000000Z']) {
      expect(isApiTimestamp(value)).toBe(false);
      expect(isCanonicalApiTimestamp(value)).toBe(false);
      expect(toEpochMicros(value)).toBeNull();
      expect(() => canonicalTimestamp(value)).toThrow();
    }
    for (const value of ['2025-13-01T00:00:00.000000Z', '2025-00-10T00:00:00Z', '2025-01-01T10:60:00Z', '2025-01-01T10:00:61Z', '2025-01-01T10:00:00+99:99', '2025-01-01T10:00:00+05:75']) {
      expect(toEpochMicros(value)).toBeNull();
    }
    // A leap second is the next minute's first instant, as PostgreSQL reads it.
    expect(canonicalTimestamp('2016-12-31T23:59:60.000000Z')).toBe('2017-01-01T00:00:00.000000Z');
    expect(isCanonicalApiTimestamp('2024-05-01T10:20:30.123Z')).toBe(false);
  });

  it.each([
    ['the year 50 is the year 50, not 1950', '0050-06-01T12:00:00.5Z', '0050-06-01T12:00:00.500000Z'],
    ['the first instant the mirror stores', '0001-01-01T00:00:00.000000Z', '0001-01-01T00:00:00.000000Z'],
    ['the last', '9999-12-31T23:59:59.999999Z', '9999-12-31T23:59:59.999999Z'],
    ['an offset inside the years 0001–9999', '0001-01-01T00:30:00-00:30', '0001-01-01T01:00:00.000000Z'],
  ])('%s: %s', (_, input, canonical) => {
    expect(canonicalTimestamp(input)).toBe(canonical);
  });

  it.each([
    ['the year 0, which PostgreSQL refuses', '0000-01-01T00:00:00.000000Z'],
    ['an offset that pushes 0001-01-01 into the year 0', '0001-01-01T00:00:00+01:00'],
    ['an offset that pushes 9999-12-31 into the year 10000', '9999-12-31T23:59:59.000000-01:00'],
  ])('is no timestamp the mirror stores: %s (%s)', (_, input) => {
    expect(toEpochMicros(input)).toBeNull();
    expect(isApiTimestamp(input)).toBe(false);
    expect(() => canonicalTimestamp(input)).toThrow(/not a timestamp/);
  });
});
